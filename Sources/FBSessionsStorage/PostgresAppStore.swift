import Crypto
import FBSessionsCore
import Foundation
import Postgres

/// ``AppStore`` over PostgreSQL. App secrets are sealed with the key ring, bound to the app's id.
public struct PostgresAppStore: AppStore {
    private let database: Database
    private let keyring: Keyring

    /// Creates the store.
    public init(database: Database, keyring: Keyring) {
        self.database = database
        self.keyring = keyring
    }

    public func addApp(_ draft: AppDraft) async throws -> App {
        let id = "app_" + Hex.encode(SecureRandom.bytes(8))
        let sealed = try keyring.seal(Array(draft.secret.utf8), context: id)
        do {
            return try await database.run { connection in
                let rows = try connection.query(
                    """
                    INSERT INTO apps AS a (id, name, facebook_app_id, secret_key_id, secret_box, redirect_uris,
                                           required_permissions)
                    VALUES (\(id), \(draft.name), \(draft.facebookAppID), \(sealed.keyID), \(sealed.box),
                            \(draft.redirectURIs), \(draft.requiredPermissions))
                    RETURNING \(unsafeSQL: AppRow.columns)
                    """)
                guard let row = rows.first else { throw MigrationError("INSERT returned no row") }
                return try AppRow.app(from: row)
            }
        } catch let error as PostgresError where error.sqlState == "23505" {
            throw ServiceError.appExists(
                error.constraintName == "apps_facebook_app_id_key" ? "facebook app \(draft.facebookAppID)" : draft.name)
        }
    }

    public func apps() async throws -> [App] {
        try await database.run { connection in
            try connection.query("SELECT \(unsafeSQL: AppRow.columns) FROM apps a ORDER BY a.name").map(AppRow.app)
        }
    }

    public func app(named name: String) async throws -> App? {
        try await database.run { connection in
            try connection.query("SELECT \(unsafeSQL: AppRow.columns) FROM apps a WHERE a.name = \(name)").first
                .map(AppRow.app)
        }
    }

    public func secret(ofApp appID: String) async throws -> String {
        let sealed: Keyring.Sealed? = try await database.run { connection in
            try connection.query("SELECT secret_key_id, secret_box FROM apps WHERE id = \(appID)").first.map {
                Keyring.Sealed(keyID: try $0.decode("secret_key_id"), box: try $0.decode("secret_box"))
            }
        }
        guard let sealed else { throw ServiceError.unknownApp(appID) }
        do {
            return String(decoding: try keyring.open(sealed, context: appID), as: UTF8.self)
        } catch {
            throw ServiceError.undecryptable
        }
    }
}
