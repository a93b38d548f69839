/// Removes the secret-bearing parts of URLs before they reach an error message or a log line.
///
/// Query strings carry access tokens and `appsecret_proof`; user info carries passwords.
enum URLRedaction {
    /// scheme://host[:port]/path of `url`, dropping user info, query and fragment. Works on any string.
    static func redact(_ url: String) -> String {
        var text = Substring(url)
        if let cut = text.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            text = text[..<cut]
        }
        guard let schemeEnd = text.range(of: "://") else {
            return String(text)
        }
        let authorityStart = schemeEnd.upperBound
        let authorityEnd = text[authorityStart...].firstIndex(of: "/") ?? text.endIndex
        guard let at = text[authorityStart..<authorityEnd].lastIndex(of: "@") else {
            return String(text)
        }
        return String(text[..<authorityStart]) + String(text[text.index(after: at)...])
    }

    /// Replaces every `?…` run (up to whitespace or a quote) in free text with `?<redacted>`, for messages such as
    /// libcurl's error buffer that may quote a URL.
    static func scrubQueries(in text: String) -> String {
        var output = ""
        var skipping = false
        for character in text {
            if skipping {
                if character.isWhitespace || character == "\"" || character == "'" {
                    skipping = false
                    output.append(character)
                }
                continue
            }
            if character == "?" {
                output += "?<redacted>"
                skipping = true
                continue
            }
            output.append(character)
        }
        return output
    }
}
