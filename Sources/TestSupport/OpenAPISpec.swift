import Foundation

/// The repository's `openapi.yaml` and the operations its `paths:` declare, with their security: read by the spec
/// conformance tests and by the whole-service tests that serve the spec or walk its operations.
public enum OpenAPISpec {
    /// The text of the repository's `openapi.yaml`.
    public static func specText() throws -> String {
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("openapi.yaml")
            if let text = try? String(contentsOf: candidate, encoding: .utf8) { return text }
            directory.deleteLastPathComponent()
        }
        throw CocoaError(.fileNoSuchFile)
    }

    /// One operation of the spec with the scopes its `security` names: nil when it is public (`security: []`),
    /// the document's default (`apiKey` with no scope) when it names none.
    public struct SpecOperation: CustomStringConvertible, Sendable {
        public let method: String
        public let path: String
        public let operationID: String
        public let scopes: [String]?
        public var description: String { "\(method) \(path) (\(operationID))" }
    }

    /// Every operation under `paths:` with its security scopes, read the way
    /// `SpecConformanceTests.specOperations(_:)` reads the paths: an operation's `security:` is either `[]` on its own
    /// line or a list of `- apiKey: [scope, ...]`.
    public static func specSecurity(_ text: String) -> [SpecOperation] {
        var found: [SpecOperation] = []
        var inPaths = false
        var path: String?
        var method: String?
        var operationID: String?
        var scopes: [String]?? = .none
        var inSecurity = false
        func flush() {
            if let path, let method, let operationID {
                found.append(SpecOperation(method: method, path: path, operationID: operationID, scopes: scopes ?? [String]()))
            }
            method = nil
            operationID = nil
            scopes = .none
            inSecurity = false
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "paths:" { inPaths = true; continue }
            guard inPaths else { continue }
            if !line.isEmpty, !line.hasPrefix(" ") { break }
            if let match = line.wholeMatch(of: #/  (\/[^:]*):/#) {
                flush()
                path = String(match.1)
                continue
            }
            if let match = line.wholeMatch(of: #/    (get|put|post|delete|patch):/#) {
                flush()
                method = match.1.uppercased()
                continue
            }
            if let match = line.wholeMatch(of: #/      operationId: (\w+)/#) { operationID = String(match.1) }
            if line == "      security: []" { scopes = .some(nil); inSecurity = false; continue }
            if line == "      security:" { inSecurity = true; scopes = .some([]); continue }
            if inSecurity {
                if let match = line.wholeMatch(of: #/        - apiKey: \[(.*)\]/#) {
                    let names = match.1.split(separator: ",").map {
                        $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
                    }.filter { !$0.isEmpty }
                    scopes = .some((scopes.flatMap { $0 } ?? []) + names)
                } else {
                    inSecurity = false
                }
            }
        }
        flush()
        return found
    }
}
