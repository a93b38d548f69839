import Foundation

/// Removes secrets from text that came from Graph or libcurl before it reaches an error, a log or a metric.
///
/// It replaces every known secret of the call (tokens, app secret, `appsecret_proof`, OAuth code), raw and
/// percent-encoded, and the value of any secret-bearing query parameter it finds, with `<redacted>`; then it cuts
/// the text to `maxCharacters`. A server that echoes the request back therefore cannot leak it through us.
struct SecretScrubber: Sendable {
    /// The longest text kept.
    static let maxCharacters = 1024
    /// Query parameters whose values are secret.
    static let secretParameters = [
        "access_token=", "input_token=", "client_secret=", "appsecret_proof=", "fb_exchange_token=", "code=",
    ]
    private static let redacted = "<redacted>"

    private let secrets: [String]

    /// - Parameter secrets: the call's secret values; empty and very short ones (under 4 bytes) are ignored, since
    ///   replacing them would mangle ordinary words without protecting anything.
    init(_ secrets: [String]) {
        var all = Set<String>()
        for secret in secrets where secret.utf8.count >= 4 {
            all.insert(secret)
            all.insert(GraphURL.percentEncoded(secret))
        }
        self.secrets = all.sorted { $0.utf8.count > $1.utf8.count }
    }

    /// `text` without secrets, at most `maxCharacters` long.
    func scrub(_ text: String) -> String {
        var output = text
        for secret in secrets where output.contains(secret) {
            output = output.replacingOccurrences(of: secret, with: SecretScrubber.redacted)
        }
        for parameter in SecretScrubber.secretParameters where output.contains(parameter) {
            output = SecretScrubber.redactValues(of: parameter, in: output)
        }
        if output.count > SecretScrubber.maxCharacters {
            output = String(output.prefix(SecretScrubber.maxCharacters)) + "…"
        }
        return output
    }

    /// Replaces the value after each `parameter` (up to `&`, whitespace, a quote or the end) with `<redacted>`.
    private static func redactValues(of parameter: String, in text: String) -> String {
        var output = ""
        var rest = Substring(text)
        while let found = rest.range(of: parameter) {
            output += rest[..<found.upperBound]
            rest = rest[found.upperBound...]
            let end = rest.firstIndex { $0 == "&" || $0 == "\"" || $0 == "'" || $0.isWhitespace } ?? rest.endIndex
            if end != rest.startIndex {
                output += redacted
            }
            rest = rest[end...]
        }
        return output + rest
    }
}
