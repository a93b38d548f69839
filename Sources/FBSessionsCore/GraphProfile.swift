/// A user's profile from `GET /me?fields=…` (docs/facebook-graph.md §2.2). Fields Graph leaves out are `nil`.
public struct GraphProfile: Sendable, Hashable {
    /// The fields `fbsessiond` asks for: `id,name,first_name,middle_name,last_name,email,link,picture`.
    public static let defaultFields = [
        "id", "name", "first_name", "middle_name", "last_name", "email", "link", "picture",
    ]

    /// `id`: the app-scoped user id (always present).
    public var id: String
    /// `name`.
    public var name: String?
    /// `first_name`.
    public var firstName: String?
    /// `middle_name`.
    public var middleName: String?
    /// `last_name`.
    public var lastName: String?
    /// `email` (needs the `email` permission and a confirmed address).
    public var email: String?
    /// `link` (needs `user_link`).
    public var link: String?
    /// `picture.data`, when `picture` was asked for.
    public var picture: GraphPicture?

    /// Creates a profile.
    public init(
        id: String,
        name: String? = nil,
        firstName: String? = nil,
        middleName: String? = nil,
        lastName: String? = nil,
        email: String? = nil,
        link: String? = nil,
        picture: GraphPicture? = nil
    ) {
        self.id = id
        self.name = name
        self.firstName = firstName
        self.middleName = middleName
        self.lastName = lastName
        self.email = email
        self.link = link
        self.picture = picture
    }

    /// The picture's CDN URL. It expires after some weeks (docs/facebook-graph.md §5.3): do not keep it for good.
    public var pictureURL: String? {
        picture?.url
    }
}
