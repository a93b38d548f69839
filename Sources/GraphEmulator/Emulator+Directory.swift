/// Registering apps and creating and changing users.
extension Emulator {
    /// Registers an app, or replaces the one with the same id.
    /// - Parameters:
    ///   - id: the app id (digits); nil generates one.
    ///   - secret: the app secret; nil generates 32 hex digits.
    ///   - name: the display name.
    ///   - requiresProof: whether user-token calls must carry `appsecret_proof`.
    ///   - clientToken: the client token; nil generates one.
    ///   - redirectURIs: allowed redirect URIs; empty allows any http(s) URI.
    ///   - developerIDs: users with a developer role (their tokens may call `debug_token`).
    /// - Returns: the registered app.
    /// - Throws: ``EmulatorError`` for an id that is not digits or an empty secret.
    @discardableResult
    public func registerApp(
        id: String? = nil, secret: String? = nil, name: String? = nil, requiresProof: Bool = false,
        clientToken: String? = nil, redirectURIs: [String] = [], developerIDs: [String] = []
    ) throws -> EmulatedApp {
        try state.withStore {
            try $0.registerApp(
                id: id, secret: secret, name: name, requiresProof: requiresProof, clientToken: clientToken,
                redirectURIs: redirectURIs, developerIDs: developerIDs)
        }
    }

    /// Creates a user, or replaces the one with the same id.
    /// - Parameters:
    ///   - id: the user id (digits); nil generates a 16-digit one.
    ///   - firstName: `first_name`.
    ///   - middleName: `middle_name`.
    ///   - lastName: `last_name`.
    ///   - name: `name`; nil joins the parts.
    ///   - email: `email` (served only with the `email` permission).
    ///   - link: `link` (served only with `user_link`).
    ///   - hasPicture: false serves the silhouette.
    /// - Returns: the user.
    /// - Throws: ``EmulatorError`` for an id that is not digits or is an app's.
    @discardableResult
    public func createUser(
        id: String? = nil, firstName: String? = nil, middleName: String? = nil, lastName: String? = nil,
        name: String? = nil, email: String? = nil, link: String? = nil, hasPicture: Bool = true
    ) throws -> EmulatedUser {
        let user = EmulatedUser(
            id: id ?? "", firstName: firstName, middleName: middleName, lastName: lastName, name: name, email: email,
            link: link, hasPicture: hasPicture)
        return try state.withStore { try $0.createUser(user, id: id) }
    }

    /// Changes a user's profile (the id cannot change).
    /// - Parameters:
    ///   - id: the user id.
    ///   - change: edits the profile in place.
    /// - Returns: the changed user.
    /// - Throws: ``EmulatorError`` when there is no such user.
    @discardableResult
    public func updateUser(_ id: String, _ change: (inout EmulatedUser) -> Void) throws -> EmulatedUser {
        try state.withStore { store in
            var user = try store.user(id)
            change(&user)
            user.id = id
            store.users[id] = user
            return user
        }
    }

    /// The registered apps, by id.
    public var apps: [EmulatedApp] {
        state.withStore { store in store.apps.values.sorted { $0.id < $1.id } }
    }

    /// The users, in creation order.
    public var users: [EmulatedUser] {
        state.withStore { store in store.userOrder.compactMap { store.users[$0] } }
    }

    /// The user with `id`, or nil.
    public func user(_ id: String) -> EmulatedUser? {
        state.withStore { $0.users[id] }
    }
}
