import Foundation

/// `openapi.yaml` as this instance serves it: the file's bytes with its `servers` entry naming the instance's
/// public URL (`FBS_PUBLIC_URL`), so that a client generated from the served document, or a tool that sends
/// requests from it, reaches this instance and not the file's placeholder.
public enum OpenAPIDocument {
    /// The document with the URL of its first `servers` entry replaced by `publicURL`.
    ///
    /// The file's `servers:` is a top-level key whose first entry is a line `  - url: ...`; that line is
    /// rewritten with `publicURL` as a double-quoted YAML string, and every other byte is kept. A document without
    /// such a line is returned as it is.
    /// - Parameters:
    ///   - document: the bytes of `openapi.yaml`.
    ///   - publicURL: the service's public base URL (a trailing slash is dropped).
    /// - Returns: the bytes to serve.
    public static func serving(_ document: [UInt8], publicURL: String) -> [UInt8] {
        let text = String(decoding: document, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let servers = lines.firstIndex(where: { $0 == "servers:" || $0.hasPrefix("servers: ") }),
            servers + 1 < lines.count, lines[servers + 1].hasPrefix("  - url: ")
        else { return document }
        var url = publicURL
        while url.hasSuffix("/") { url.removeLast() }
        lines[servers + 1] = "  - url: " + quoted(url)
        return Array(lines.joined(separator: "\n").utf8)
    }

    /// `value` as a YAML double-quoted scalar: `"` and `\` escaped, control characters as `\uXXXX`.
    static func quoted(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// The media type to answer `GET /openapi.yaml` with: `text/plain` when the request's `Accept` names it with
    /// a higher quality than `application/yaml` (`text/*` counts for text, `application/*` and `*/*` for YAML), else
    /// `application/yaml`.
    /// - Parameter accept: the `Accept` header, if any.
    /// - Returns: the `Content-Type` value, with its charset.
    public static func contentType(accept: String?) -> String {
        let yaml = "application/yaml; charset=utf-8"
        guard let accept else { return yaml }
        var textQuality = 0.0
        var yamlQuality = 0.0
        for part in accept.split(separator: ",") {
            let pieces = part.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let range = pieces.first else { continue }
            var quality = 1.0
            for parameter in pieces.dropFirst() where parameter.hasPrefix("q=") {
                quality = Double(parameter.dropFirst(2)) ?? 0
            }
            switch range {
            case "text/plain", "text/*": textQuality = max(textQuality, quality)
            case "application/yaml", "application/*", "*/*": yamlQuality = max(yamlQuality, quality)
            default: break
            }
        }
        return textQuality > yamlQuality ? "text/plain; charset=utf-8" : yaml
    }
}
