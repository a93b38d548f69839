/// Fetches picture bytes from the CDN (the port; `FBSessionsGraph.PictureFetcher` is the adapter over libcurl).
///
/// Implementations must keep every rule of ``PictureURLPolicy`` for the URL and for each redirect (checked
/// before it is followed, so a refused target is never contacted), stop reading at `limits.maxBytes`, give up
/// after `limits.timeout` in total, and accept only a 200 whose `Content-Type` is a ``PictureImageType`` and whose
/// bytes carry that type's magic number.
public protocol PictureFetching: Sendable {
    /// Fetches one picture.
    /// - Parameters:
    ///   - url: a URL the policy accepted.
    ///   - policy: the rules for redirects.
    ///   - limits: size, time and redirect limits.
    /// - Returns: the image.
    /// - Throws: ``PictureError/refused(_:)`` when a rule is broken, ``PictureError/unavailable(_:)`` when the
    ///   CDN fails; `CancellationError` when the task is cancelled.
    func fetch(_ url: PictureURL, policy: PictureURLPolicy, limits: PictureFetchLimits) async throws -> PictureDownload
}

/// Bounds of one fetch.
public struct PictureFetchLimits: Sendable, Equatable {
    /// Largest body (`FBS_PICTURE_MAX_BYTES`).
    public var maxBytes: Int
    /// Seconds for the whole fetch, redirects included.
    public var timeout: Double
    /// Most redirects followed (each to an allowed URL).
    public var maxRedirects: Int

    /// Creates limits.
    /// - Parameters:
    ///   - maxBytes: the size cap; default 5 MiB.
    ///   - timeout: seconds in total; default 10.
    ///   - maxRedirects: redirects followed; default 3.
    public init(maxBytes: Int = 5_242_880, timeout: Double = 10, maxRedirects: Int = 3) {
        self.maxBytes = maxBytes
        self.timeout = timeout
        self.maxRedirects = maxRedirects
    }
}

/// A fetched picture whose type and magic number agree.
public struct PictureDownload: Sendable, Equatable {
    /// The image type (served as the `Content-Type`).
    public var type: PictureImageType
    /// The bytes.
    public var body: [UInt8]

    /// Creates a download.
    public init(type: PictureImageType, body: [UInt8]) {
        self.type = type
        self.body = body
    }
}
