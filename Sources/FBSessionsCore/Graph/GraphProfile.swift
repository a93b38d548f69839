/// A user's profile from `GET /me?fields=…` (docs/facebook-graph.md §2.2). Fields Graph leaves out are `nil`.
///
/// The profile's fields are ``Profile``'s (read through it: `graph.name` is `graph.profile.name`), so that a
/// field added there is asked for and read here without another list; ``picture`` keeps what else Graph says
/// about the picture.
@dynamicMemberLookup
public struct GraphProfile: Sendable, Hashable {
    /// The fields `fbsessiond` asks for, each ``Profile/Field``'s ``Profile/Field/graphField``:
    /// `id,name,first_name,middle_name,last_name,email,link,picture`.
    public static let defaultFields = Profile.Field.allCases.map(\.graphField)

    /// The profile as a session keeps it; its ``Profile/pictureURL`` is ``picture``'s URL when there is one.
    public let profile: Profile
    /// `picture.data`, when `picture` was asked for.
    public let picture: GraphPicture?

    /// Creates a profile; `picture`'s URL, when there is one, becomes the profile's ``Profile/pictureURL``.
    public init(_ profile: Profile, picture: GraphPicture? = nil) {
        var profile = profile
        if let picture { profile.pictureURL = picture.url }
        self.profile = profile
        self.picture = picture
    }

    /// A field of ``profile``.
    public subscript<Value>(dynamicMember keyPath: KeyPath<Profile, Value>) -> Value {
        profile[keyPath: keyPath]
    }
}

extension Profile.Field {
    /// The `/me` field that gives this one: the same name, except `picture` for ``Profile/Field/pictureURL``
    /// (`picture.data.url`). `GraphWire.Profile` reads every field but that one and `id` as a string by this name.
    public var graphField: String {
        self == .pictureURL ? "picture" : rawValue
    }
}
