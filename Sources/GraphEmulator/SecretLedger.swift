import Crypto
import Foundation

/// The secrets ledger of a test run: when `FBS_SECRETS_LEDGER` names a file, every secret the emulator mints is
/// appended to it, so that `tools/secrets/scan-run` can search the run's logs, responses and database dumps for
/// each of them in every encoding (docs/reliability.md, "Secrets: the whole suite").
///
/// The emulator notes the user and Page tokens it issues (short-lived, long-lived, exchanged), the
/// `appsecret_proof` of each, the OAuth codes, and the app secrets and app-token suffixes of the apps it
/// registers. The test helpers (`TestSupport.SecretsTranscript`) and the test scripts note, in the same file, the
/// API keys, encryption keys and other secrets they create. The service never writes here: the emulator plays
/// Facebook, and nothing in the product's request path calls this.
///
/// Format: one line per secret, `kind<TAB>lowercase hex of its bytes<LF>`, appended with one `write(2)` to a file
/// opened with `O_APPEND` (mode 0600), so that many processes may note into one ledger at once. The ledger is
/// itself secret material: it is never printed. Without the variable (the default) nothing is written.
///
/// Thread safety: any thread; each line is one `write(2)`.
public enum SecretLedger {
    /// The ledger's descriptor, or -1 when the variable is unset or the file cannot be opened.
    private static let descriptor: Int32 = {
        guard let path = ProcessInfo.processInfo.environment["FBS_SECRETS_LEDGER"], !path.isEmpty else { return -1 }
        return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
    }()

    /// Whether secrets are being noted (the variable names a file that could be opened).
    public static var isEnabled: Bool { descriptor >= 0 }

    /// Notes one secret.
    /// - Parameters:
    ///   - kind: what it is (`user token`, `api key`, ...), a fixed text without tab or newline.
    ///   - value: the secret.
    public static func note(_ kind: String, _ value: String) {
        note(kind, bytes: Array(value.utf8))
    }

    /// Notes one secret given as raw bytes (an encryption key, say).
    /// - Parameters:
    ///   - kind: what it is, a fixed text without tab or newline.
    ///   - bytes: the secret's bytes.
    public static func note(_ kind: String, bytes: [UInt8]) {
        guard descriptor >= 0, !bytes.isEmpty else { return }
        let line = Array((kind + "\t" + Hex.encode(bytes) + "\n").utf8)
        line.withUnsafeBytes { raw in
            _ = write(descriptor, raw.baseAddress, raw.count)
        }
    }

    /// Notes a user or Page token the emulator issued, and its `appsecret_proof` under `appSecret`
    /// (HMAC-SHA256 of the token keyed with the app secret, in hex: what the service sends with every call).
    static func noteToken(_ token: String, appSecret: String?) {
        guard isEnabled else { return }
        note("user token", token)
        if let appSecret {
            note("appsecret_proof", Hex.encode(HMACSHA256.authenticationCode(for: token, key: Array(appSecret.utf8))))
        }
    }
}
