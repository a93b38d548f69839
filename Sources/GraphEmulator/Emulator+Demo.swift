/// What ``Emulator/seedDemo(redirectURIs:)`` set up.
public struct DemoSeed: Sendable {
    /// The demo app (fixed id and secret; ``Emulator/demoRedirectURI`` and any others asked for registered).
    public let app: EmulatedApp
    /// Alice (with a picture, email and link) and Bob (silhouette, middle name, no link).
    public let users: [EmulatedUser]
    /// A line to print: how to get a demo user token.
    public let instructions: String
}

/// The demo data `fbsessiond run` and `fbsessiond graph-emulator` start with.
extension Emulator {
    /// The demo app id.
    public static let demoAppID = "1000000000000001"
    /// The demo app secret. Public on purpose: it only works against the emulator.
    public static let demoAppSecret = "demo-app-secret-for-the-local-emulator"
    /// Alice's user id.
    public static let demoAliceID = "10000000000000001"
    /// Bob's user id.
    public static let demoBobID = "10000000000000002"
    /// The redirect URI the demo app registers: the one `fbsessiond run`'s demo app uses in its login URLs.
    public static let demoRedirectURI = "http://127.0.0.1:3000/callback"

    /// Registers the demo app and the two demo users (again, if they exist). Idempotent.
    /// - Parameter redirectURIs: valid OAuth redirect URIs beside ``demoRedirectURI`` (the dialog refuses others).
    /// - Returns: the app, the users, and a printable way to get a demo token.
    @discardableResult
    public func seedDemo(redirectURIs: [String] = []) -> DemoSeed {
        let base = baseURL
        return state.withStore { store in
            // Seeding again keeps the URIs registered before (a control-API reseed after `--redirect-uri`).
            var registered = [Self.demoRedirectURI]
            for uri in (store.apps[Self.demoAppID]?.redirectURIs ?? []) + redirectURIs where !registered.contains(uri) {
                registered.append(uri)
            }
            let app =
                (try? store.registerApp(
                    id: Self.demoAppID, secret: Self.demoAppSecret, name: "fbsessions demo", requiresProof: false,
                    clientToken: "demo-client-token", redirectURIs: registered, developerIDs: [Self.demoAliceID]))
                ?? EmulatedApp(
                    id: Self.demoAppID, secret: Self.demoAppSecret, clientToken: "demo-client-token",
                    redirectURIs: registered)
            let alice = EmulatedUser(
                id: Self.demoAliceID, firstName: "Alice", lastName: "Example", email: "alice@example.com",
                link: "https://www.facebook.com/app_scoped_user_id/\(Self.demoAliceID)/", hasPicture: true)
            let bob = EmulatedUser(
                id: Self.demoBobID, firstName: "Bob", middleName: "Q", lastName: "Sample", email: "bob@example.com",
                hasPicture: false)
            let users = [alice, bob].compactMap { try? store.createUser($0, id: $0.id) }
            return DemoSeed(
                app: app, users: users,
                instructions: "Demo user token: curl -X POST '\(base)/__emulator/demo-token?user=alice'"
                    + " (or user=bob); demo app \(Self.demoAppID), secret \(Self.demoAppSecret)")
        }
    }

    /// Issues a long-lived token of the demo app for a demo user, seeding the demo first if needed.
    /// - Parameter user: `alice`, `bob`, or a user id.
    /// - Returns: a token granting `public_profile`, `email` and `user_link`.
    /// - Throws: ``EmulatorError`` for an unknown user.
    public func issueDemoToken(user: String) throws -> IssuedToken {
        if state.withStore({ $0.apps[Self.demoAppID] == nil }) { seedDemo() }
        let userID: String
        switch user.lowercased() {
        case "alice": userID = Self.demoAliceID
        case "bob": userID = Self.demoBobID
        default: userID = user
        }
        return try issueToken(
            appID: Self.demoAppID, userID: userID, longLived: true, granted: ["public_profile", "email", "user_link"])
    }
}
