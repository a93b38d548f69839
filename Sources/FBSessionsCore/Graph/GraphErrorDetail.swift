/// What Graph said about a failed call: the fields of its `{"error": {...}}` body (docs/facebook-graph.md §7.1), or of
/// `debug_token`'s `data.error` (§3.2).
///
/// It never holds an access token, app secret, `appsecret_proof` or OAuth code: the Graph client removes any of
/// them from `message` before building a detail. `code` is 0 when Graph sent no code, or when the error arose in
/// the client itself (then `type` is `nil` and `message` says what happened).
public struct GraphErrorDetail: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Graph's error `code`, for example 190; 0 when absent or local.
    public var code: Int
    /// Graph's `error_subcode` (`subcode` in `debug_token`), for example 463.
    public var subcode: Int?
    /// Graph's `type`, for example `OAuthException` or `GraphMethodException`.
    public var type: String?
    /// Graph's developer message (`message`, else `error_msg`, `error_reason` or `error_description`).
    public var message: String
    /// Graph's support id, `fbtrace_id`.
    public var fbtraceID: String?
    /// Graph's `is_transient` flag.
    public var isTransient: Bool
    /// Graph's localized title for people, `error_user_title`.
    public var userTitle: String?
    /// Graph's localized message for people, `error_user_msg`.
    public var userMessage: String?
    /// The HTTP status of the response that carried the error (200 for `debug_token`'s `data.error`).
    public var httpStatus: Int?

    /// Creates a detail.
    /// - Parameters:
    ///   - code: the Graph error code, 0 when absent or local.
    ///   - subcode: the subcode, if any.
    ///   - type: the error type, if any.
    ///   - message: the developer message (must not contain secrets).
    ///   - fbtraceID: the support id, if any.
    ///   - isTransient: Graph's `is_transient`.
    ///   - userTitle: the localized title, if any.
    ///   - userMessage: the localized message, if any.
    ///   - httpStatus: the HTTP status, if known.
    public init(
        code: Int,
        subcode: Int? = nil,
        type: String? = nil,
        message: String,
        fbtraceID: String? = nil,
        isTransient: Bool = false,
        userTitle: String? = nil,
        userMessage: String? = nil,
        httpStatus: Int? = nil
    ) {
        self.code = code
        self.subcode = subcode
        self.type = type
        self.message = message
        self.fbtraceID = fbtraceID
        self.isTransient = isTransient
        self.userTitle = userTitle
        self.userMessage = userMessage
        self.httpStatus = httpStatus
    }

    /// `code`/`subcode`, `type` and `fbtrace_id`, for example `190/463 OAuthException fbtrace_id=AbC`; no message.
    public var description: String {
        var text = subcode.map { "\(code)/\($0)" } ?? "\(code)"
        if let type {
            text += " \(type)"
        }
        if let httpStatus {
            text += " http=\(httpStatus)"
        }
        if let fbtraceID {
            text += " fbtrace_id=\(fbtraceID)"
        }
        return text
    }

    /// The description plus Graph's message.
    public var debugDescription: String {
        "\(description): \(message)"
    }
}
