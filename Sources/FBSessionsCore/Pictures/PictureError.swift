/// Why a profile picture could not be served. The API maps `.refused` to 502 `picture_refused`, `.unavailable` to
/// 503 `picture_unavailable` and `.notCached` to 404 `picture_not_cached`; Graph's own failures stay `GraphError`.
public enum PictureError: Error, Equatable, Sendable {
    /// The picture URL, a redirect or the bytes broke a safety rule; nothing (more) was fetched.
    case refused(PictureRefusal)
    /// The CDN could not be reached, timed out, or answered with an error status; retrying later may work.
    case unavailable(PictureUnavailability)
    /// A Limited Login session's picture cannot be fetched (its URL expired, or its token named none) and no copy
    /// is cached; it comes with the person's next login (404 `picture_not_cached`).
    case notCached(PictureAbsence)
}

/// Why a limited session's picture cannot be fetched (``PictureError/notCached(_:)``). Raw values are safe to show.
public enum PictureAbsence: String, Sendable {
    /// The `picture` URL of the token has expired (its `ext` or `oe` has passed).
    case urlExpired = "url_expired"
    /// The token had no `picture` claim.
    case noPicture = "no_picture"
}

/// The safety rule a picture broke (``PictureError/refused(_:)``). Raw values are safe to show and to log.
public enum PictureRefusal: String, Sendable, CaseIterable {
    /// Not an absolute URL of the accepted grammar (see ``PictureURLPolicy``).
    case malformedURL = "malformed_url"
    /// Not `https` (nor `http` while `FBS_PICTURE_ALLOW_HTTP` is on).
    case scheme
    /// The host is not on `FBS_PICTURE_HOSTS`.
    case host
    /// The host is on `FBS_PICTURE_HOSTS` by suffix but resolves to a loopback, private, link-local or otherwise
    /// non-public address (``PictureAddressRule``); nothing was connected to.
    case address
    /// A redirect pointed outside the policy, had no `Location`, or there were too many.
    case redirect
    /// The body is, or was announced to be, larger than `FBS_PICTURE_MAX_BYTES`.
    case tooLarge = "too_large"
    /// The content type is not one of the image types served (PNG, JPEG, GIF, WebP).
    case contentType = "content_type"
    /// The bytes do not start with the magic number of their declared image type.
    case notAnImage = "not_an_image"

    /// A sentence for the error message.
    public var explanation: String {
        switch self {
        case .malformedURL: return "the picture URL is malformed"
        case .scheme: return "the picture URL is not https"
        case .host: return "the picture URL's host is not an allowed picture host"
        case .address: return "the picture URL's host resolves to a non-public address"
        case .redirect: return "the picture CDN redirected outside the allowed picture hosts"
        case .tooLarge: return "the picture is larger than the size limit"
        case .contentType: return "the picture CDN did not answer with an image type"
        case .notAnImage: return "the picture's bytes do not match its image type"
        }
    }
}

/// Why the CDN could not deliver (``PictureError/unavailable(_:)``).
public enum PictureUnavailability: String, Sendable {
    /// No connection, or it broke.
    case unreachable
    /// The fetch took longer than its timeout.
    case timeout
    /// The CDN answered with a status other than 200 (or a redirect).
    case status
    /// Another request (perhaps on another instance) was fetching the same picture and did not finish in time.
    case busy
}
