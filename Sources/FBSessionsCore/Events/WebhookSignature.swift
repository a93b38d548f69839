import Crypto
import Foundation

/// The `X-FBS-Signature` header of webhook deliveries: `t=<unix seconds>,v1=<hex HMAC-SHA256>`.
///
/// The HMAC key is the UTF-8 text of the webhook's secret (`whsec_…`) and the message is the timestamp, a
/// dot, and the exact body bytes: `HMAC-SHA256(secret, t + "." + body)`. A receiver recomputes it, compares in
/// constant time, and rejects timestamps too far from its clock, which limits replays.
public enum WebhookSignature {
    /// The header's name.
    public static let headerName = "X-FBS-Signature"

    /// The header value for a body signed at `timestamp`.
    ///
    /// - Parameters:
    ///   - secret: The webhook's signing secret.
    ///   - timestamp: Unix seconds.
    ///   - body: The exact body bytes sent.
    /// - Returns: `t=<timestamp>,v1=<64 lowercase hex digits>`.
    public static func header(secret: String, timestamp: Int, body: [UInt8]) -> String {
        "t=\(timestamp),v1=" + Hex.encode(code(secret: secret, timestamp: timestamp, body: body))
    }

    /// Checks a received header against the body, as a receiver does.
    ///
    /// - Parameters:
    ///   - header: The `X-FBS-Signature` value.
    ///   - secret: The webhook's signing secret.
    ///   - body: The body bytes as received.
    ///   - now: The receiver's clock.
    ///   - tolerance: How far the timestamp may be from `now`, in seconds. Default 300.
    /// - Returns: Whether one `v1` signature matches and the timestamp is within the tolerance.
    public static func isValid(
        _ header: String, secret: String, body: [UInt8], now: Date = Date(), tolerance: Int = 300
    ) -> Bool {
        var timestamp: Int?
        var signatures: [[UInt8]] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            switch pair[0].trimmingCharacters(in: .whitespaces) {
            case "t": timestamp = Int(pair[1])
            case "v1": Hex.decode(String(pair[1])).map { signatures.append($0) }
            default: continue
            }
        }
        guard let timestamp, abs(Int(now.timeIntervalSince1970) - timestamp) <= tolerance else { return false }
        let expected = code(secret: secret, timestamp: timestamp, body: body)
        return signatures.contains { constantTimeEquals($0, expected) }
    }

    private static func code(secret: String, timestamp: Int, body: [UInt8]) -> [UInt8] {
        HMACSHA256.authenticationCode(for: Array("\(timestamp).".utf8) + body, key: Array(secret.utf8))
    }
}
