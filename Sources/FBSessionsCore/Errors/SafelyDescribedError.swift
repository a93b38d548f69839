/// An error whose `safeDescription` may be written to a log as is: it holds no parameter, URL, token or server
/// text. The API logs it beside the error's type when a request fails in a way no mapping knew (500).
public protocol SafelyDescribedError: Error {
    /// A description free of secrets and of request data.
    var safeDescription: String { get }
}
