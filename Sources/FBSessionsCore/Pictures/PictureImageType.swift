/// The image types the service serves, each recognised both by its media type and by its magic number.
///
/// A CDN answer is accepted only when its `Content-Type` names one of these and the bytes start with that
/// type's signature, so that a body of HTML, SVG (script-capable) or anything else is never served as a picture.
public enum PictureImageType: String, Sendable, CaseIterable {
    /// `89 50 4E 47 0D 0A 1A 0A`.
    case png = "image/png"
    /// `FF D8 FF`.
    case jpeg = "image/jpeg"
    /// `GIF87a` or `GIF89a`.
    case gif = "image/gif"
    /// `RIFF` ⋯ `WEBP`.
    case webp = "image/webp"

    /// The type a `Content-Type` value names (parameters and case ignored; `image/jpg` and `image/pjpeg` are
    /// JPEG), or nil for anything else, `image/svg+xml` included.
    /// - Parameter contentType: the header value.
    public init?(contentType: String) {
        let media = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        switch media {
        case "image/png": self = .png
        case "image/jpeg", "image/jpg", "image/pjpeg": self = .jpeg
        case "image/gif": self = .gif
        case "image/webp": self = .webp
        default: return nil
        }
    }

    /// The type whose magic number `bytes` start with, or nil.
    /// - Parameter bytes: the body, or at least its first 12 bytes.
    public static func sniff(_ bytes: some Collection<UInt8>) -> PictureImageType? {
        let head = Array(bytes.prefix(12))
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if head.starts(with: Array("GIF87a".utf8)) || head.starts(with: Array("GIF89a".utf8)) { return .gif }
        if head.count == 12, head.starts(with: Array("RIFF".utf8)), Array(head[8..<12]) == Array("WEBP".utf8) {
            return .webp
        }
        return nil
    }

    /// Whether `bytes` start with this type's magic number.
    public func matches(_ bytes: some Collection<UInt8>) -> Bool {
        Self.sniff(bytes) == self
    }
}
