/// A Facebook profile as stored with a session.
///
/// The one definition of the profile's fields: each is a stored property here and a case of ``Field``, which
/// gives its JSON name. Everything that handles every field goes through ``Field`` and ``subscript(_:)``: the
/// `sessions.profile` jsonb column (``Codable``) and the select list and row decoding that read it back, the
/// session's JSON body, the exact cache's size estimate, `profile.changed` (``changedFields(from:)``) and the
/// fields `/me` asks Graph for (``GraphProfile/defaultFields``). Adding a field is the property, the case and its
/// two arms in the subscript (the compiler asks for those), and, for a field the logins should fill in, a
/// parameter of ``init(id:name:firstName:middleName:lastName:email:link:pictureURL:)``; a field Graph does not
/// return as a string under its own name needs ``Field/graphField`` and `GraphWire.Profile` too.
public struct Profile: Sendable, Hashable, Codable {
    /// The app-scoped user id.
    public var id: String
    /// Full name.
    public var name: String?
    /// First name.
    public var firstName: String?
    /// Middle name.
    public var middleName: String?
    /// Last name.
    public var lastName: String?
    /// Email, when the `email` permission is granted.
    public var email: String?
    /// Profile link, when `user_link` is granted.
    public var link: String?
    /// The picture URL Graph gave (it expires; the service serves pictures itself).
    public var pictureURL: String?

    /// A field of the profile, named as in JSON: the session body's `profile` object, the `sessions.profile`
    /// column, `profile.changed`'s `fields`. The cases are in the order the fields are stored and reported in.
    public enum Field: String, Sendable, CaseIterable, CodingKey {
        case id, name
        case firstName = "first_name"
        case middleName = "middle_name"
        case lastName = "last_name"
        case email, link
        case pictureURL = "picture_url"

        /// Whether a change of the field is a `profile.changed`: not the id, which is the person's and never
        /// changes, and not the picture URL, which Graph signs anew on every call.
        public var isAnnounced: Bool {
            self != .id && self != .pictureURL
        }
    }

    /// The value of `field`. The id is never absent: setting it to `nil` sets the empty string.
    public subscript(field: Field) -> String? {
        get {
            switch field {
            case .id: id
            case .name: name
            case .firstName: firstName
            case .middleName: middleName
            case .lastName: lastName
            case .email: email
            case .link: link
            case .pictureURL: pictureURL
            }
        }
        set {
            switch field {
            case .id: id = newValue ?? ""
            case .name: name = newValue
            case .firstName: firstName = newValue
            case .middleName: middleName = newValue
            case .lastName: lastName = newValue
            case .email: email = newValue
            case .link: link = newValue
            case .pictureURL: pictureURL = newValue
            }
        }
    }

    /// Creates a profile.
    public init(
        id: String, name: String? = nil, firstName: String? = nil, middleName: String? = nil, lastName: String? = nil,
        email: String? = nil, link: String? = nil, pictureURL: String? = nil
    ) {
        self.id = id
        self.name = name
        self.firstName = firstName
        self.middleName = middleName
        self.lastName = lastName
        self.email = email
        self.link = link
        self.pictureURL = pictureURL
    }

    /// The profile Graph returned.
    public init(_ graph: GraphProfile) {
        self = graph.profile
    }

    /// Reads the object ``encode(to:)`` writes: `id` required, every other field optional.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Field.self)
        self.init(id: try container.decode(String.self, forKey: .id))
        for field in Field.allCases where field != .id {
            self[field] = try container.decodeIfPresent(String.self, forKey: field)
        }
    }

    /// An object of the fields by their JSON names, absent ones left out (as `sessions.profile` holds them).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Field.self)
        for field in Field.allCases {
            try container.encodeIfPresent(self[field], forKey: field)
        }
    }

    /// The names of the fields that differ from `other` (for `profile.changed`), in ``Field`` order; only the
    /// announced ones (``Field/isAnnounced``).
    public func changedFields(from other: Profile) -> [String] {
        Field.allCases.filter { $0.isAnnounced && self[$0] != other[$0] }.map(\.rawValue)
    }
}
