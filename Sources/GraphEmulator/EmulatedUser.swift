/// A person known to the emulator. Ids are the same for every app (the emulator does not scope ids per app).
public struct EmulatedUser: Sendable, Equatable {
    /// The user id, a string of digits.
    public var id: String
    /// `first_name`; nil or empty leaves the field out.
    public var firstName: String?
    /// `middle_name`; nil or empty leaves the field out.
    public var middleName: String?
    /// `last_name`; nil or empty leaves the field out.
    public var lastName: String?
    /// `name`; nil means first, middle and last joined by spaces.
    public var name: String?
    /// `email`, returned only with the `email` permission.
    public var email: String?
    /// `link`, returned only with the `user_link` permission.
    public var link: String?
    /// Whether the user has a profile picture; without one, pictures are the silhouette.
    public var hasPicture: Bool

    /// Creates a user description.
    /// - Parameters:
    ///   - id: the user id (digits).
    ///   - firstName: the first name.
    ///   - middleName: the middle name.
    ///   - lastName: the last name.
    ///   - name: the full name; nil derives it from the parts.
    ///   - email: the primary email address.
    ///   - link: the profile link.
    ///   - hasPicture: whether a picture (not the silhouette) is served.
    public init(
        id: String, firstName: String? = nil, middleName: String? = nil, lastName: String? = nil,
        name: String? = nil, email: String? = nil, link: String? = nil, hasPicture: Bool = true
    ) {
        self.id = id
        self.firstName = firstName
        self.middleName = middleName
        self.lastName = lastName
        self.name = name
        self.email = email
        self.link = link
        self.hasPicture = hasPicture
    }

    /// The full name Graph returns as `name`.
    public var displayName: String {
        if let name, !name.isEmpty { return name }
        return [firstName, middleName, lastName].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " ")
    }
}
