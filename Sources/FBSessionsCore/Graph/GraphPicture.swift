/// A profile picture's description, from `/me/picture?redirect=false` or `picture.data` (docs/facebook-graph.md §5.2).
public struct GraphPicture: Sendable, Hashable {
    /// The CDN URL (expires; see docs/facebook-graph.md §5.3).
    public var url: String
    /// Width in pixels, if given.
    public var width: Int?
    /// Height in pixels, if given.
    public var height: Int?
    /// Whether it is the default silhouette.
    public var isSilhouette: Bool

    /// Creates a value.
    /// - Parameters:
    ///   - url: the CDN URL.
    ///   - width: the width.
    ///   - height: the height.
    ///   - isSilhouette: whether it is the silhouette.
    public init(url: String, width: Int? = nil, height: Int? = nil, isSilhouette: Bool = false) {
        self.url = url
        self.width = width
        self.height = height
        self.isSilhouette = isSilhouette
    }
}

/// Which picture to ask for: a `type`, or `width`/`height`, or nothing for Graph's default (docs/facebook-graph.md
/// §5.1).
public struct GraphPictureSize: Sendable, Hashable {
    /// Graph's named sizes.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// About 50×50.
        case square
        /// About 50 pixels wide.
        case small
        /// About 100 pixels wide.
        case normal
        /// About 200 pixels wide.
        case large
        /// The album size.
        case album
    }

    /// `type`, if any.
    public var kind: Kind?
    /// `width`, if any.
    public var width: Int?
    /// `height`, if any.
    public var height: Int?

    /// Graph's default picture.
    public static let `default` = GraphPictureSize()

    /// Creates a size.
    /// - Parameters:
    ///   - kind: a named size.
    ///   - width: a width in pixels.
    ///   - height: a height in pixels.
    public init(kind: Kind? = nil, width: Int? = nil, height: Int? = nil) {
        self.kind = kind
        self.width = width
        self.height = height
    }
}
