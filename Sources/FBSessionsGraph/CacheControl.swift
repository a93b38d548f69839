/// Reading `Cache-Control` (RFC 9111 §5.2) for the one directive a key set's answer needs.
enum CacheControl {
    /// The freshness lifetime `values` give: `max-age=N` (N whole seconds; `s-maxage` is for shared caches and is
    /// not read), 0 for `no-cache` or `no-store`, nil when they name none. A malformed `max-age` counts as none.
    /// - Parameter values: every `Cache-Control` header value of the answer.
    static func maxAge(_ values: [String]) -> Double? {
        var found: Double?
        for value in values {
            for directive in value.split(separator: ",") {
                let parts = directive.split(separator: "=", maxSplits: 1).map {
                    $0.trimmingCharacters(in: .whitespaces).lowercased()
                }
                guard let name = parts.first else { continue }
                if name == "no-cache" || name == "no-store" { return 0 }
                if name == "max-age", parts.count == 2 {
                    var digits = parts[1]
                    if digits.hasPrefix("\""), digits.hasSuffix("\""), digits.count >= 2 {
                        digits = String(digits.dropFirst().dropLast())
                    }
                    guard !digits.isEmpty, digits.count <= 10, digits.allSatisfy(\.isASCII),
                        let seconds = Int(digits), seconds >= 0
                    else { continue }
                    found = found ?? Double(seconds)
                }
            }
        }
        return found
    }
}
