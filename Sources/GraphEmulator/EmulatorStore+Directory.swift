import Crypto

/// Apps and users.
extension EmulatorStore {
    /// Registers (or replaces) an app; generates the parts left nil.
    mutating func registerApp(
        id: String?, secret: String?, name: String?, requiresProof: Bool, clientToken: String?,
        redirectURIs: [String], developerIDs: [String]
    ) throws -> EmulatedApp {
        let id = id ?? freshID(length: 15) { apps[$0] == nil }
        guard RandomText.isNumeric(id), id.count <= 32 else { throw EmulatorError("an app id is 1 to 32 digits") }
        if let secret, secret.isEmpty || secret.contains("|") {
            throw EmulatorError("an app secret is non-empty and has no '|'")
        }
        let app = EmulatedApp(
            id: id, secret: secret ?? Hex32.random(), name: name ?? "Emulated App \(id)", requiresProof: requiresProof,
            clientToken: clientToken ?? Hex32.random(), redirectURIs: redirectURIs, developerIDs: developerIDs)
        apps[id] = app
        appTokenSuffixes[id] = appTokenSuffixes[id] ?? RandomText.alphanumeric(27)
        if SecretLedger.isEnabled {
            SecretLedger.note("app secret", app.secret)
            SecretLedger.note("app token", app.id + "|" + (appTokenSuffixes[id] ?? ""))
        }
        return app
    }

    /// Creates (or replaces) a user; generates the id when nil.
    mutating func createUser(_ user: EmulatedUser?, id: String?) throws -> EmulatedUser {
        let id = id ?? freshID(length: 16) { users[$0] == nil }
        guard RandomText.isNumeric(id), id.count <= 32 else { throw EmulatorError("a user id is 1 to 32 digits") }
        guard apps[id] == nil else { throw EmulatorError("user id \(id) is already an app id") }
        var user = user ?? EmulatedUser(id: id)
        user.id = id
        if users[id] == nil { userOrder.append(id) }
        users[id] = user
        return user
    }

    /// A user by id, or an error naming it.
    func user(_ id: String) throws -> EmulatedUser {
        guard let user = users[id] else { throw EmulatorError("no user \(id)") }
        return user
    }

    /// An app by id, or an error naming it.
    func app(_ id: String) throws -> EmulatedApp {
        guard let app = apps[id] else { throw EmulatorError("no app \(id)") }
        return app
    }

    private func freshID(length: Int, isFree: (String) -> Bool) -> String {
        while true {
            let candidate = RandomText.digits(length)
            if isFree(candidate) && users[candidate] == nil && apps[candidate] == nil { return candidate }
        }
    }
}

/// 32 random hex digits, the shape of app secrets and client tokens.
enum Hex32 {
    static func random() -> String {
        Hex.encode(SecureRandom.bytes(16))
    }
}
