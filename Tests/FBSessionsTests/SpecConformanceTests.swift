import FBSessionsAPI
import FBSessionsCore
import Foundation
import Support
import Testing

/// `openapi.yaml` and the router must describe the same operations, and the spec's error-code list must be the
/// API's, both ways.
@Suite struct SpecConformanceTests {
    static func specText() throws -> String {
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("openapi.yaml")
            if let text = try? String(contentsOf: candidate, encoding: .utf8) { return text }
            directory.deleteLastPathComponent()
        }
        throw CocoaError(.fileNoSuchFile)
    }

    /// (METHOD, path, operationId) triples under `paths:`; the spec is written with two-space indents.
    static func specOperations(_ text: String) -> Set<String> {
        var operations: Set<String> = []
        var inPaths = false
        var path: String?
        var method: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "paths:" { inPaths = true; continue }
            if inPaths, !line.isEmpty, !line.hasPrefix(" ") { break }
            if let match = line.wholeMatch(of: #/  (\/[^:]*):/#) { path = String(match.1) }
            if let match = line.wholeMatch(of: #/    (get|put|post|delete|patch):/#) { method = match.1.uppercased() }
            if let match = line.wholeMatch(of: #/      operationId: (\w+)/#), let path, let method {
                operations.insert("\(method) \(path) \(match.1)")
            }
        }
        return operations
    }

    static func specErrorCodes(_ text: String) -> Set<String> {
        guard let start = text.range(of: "    ErrorCode:\n") else { return [] }
        var codes: Set<String> = []
        var inEnum = false
        for line in text[start.upperBound...].split(separator: "\n") {
            if line.hasPrefix("      enum:") { inEnum = true; continue }
            if inEnum, let match = line.wholeMatch(of: #/        - ([a-z_]+)/#) {
                codes.insert(String(match.1))
            } else if inEnum {
                break
            }
        }
        return codes
    }

    @Test func routesAndSpecMatchBothWays() throws {
        let services = Services(
            apps: UnusedAppStore(), keys: InMemoryKeyStore(), readiness: FixedReadiness(), metrics: MetricsRegistry(),
            openAPIDocument: [], sessions: .unused(), maxSlots: 8)
        let routed = Set(APIRoutes.all(services).map { "\($0.method) \($0.path) \($0.operationID)" })
        let specified = Self.specOperations(try Self.specText())
        #expect(!specified.isEmpty)
        #expect(routed.subtracting(specified).isEmpty, "routes missing from openapi.yaml: \(routed.subtracting(specified))")
        #expect(specified.subtracting(routed).isEmpty, "spec operations without a route: \(specified.subtracting(routed))")
    }

    @Test func errorCodesMatchBothWays() throws {
        let specified = Self.specErrorCodes(try Self.specText())
        let emitted = Set(ErrorCode.allCases.map(\.rawValue))
        #expect(specified == emitted, "spec only: \(specified.subtracting(emitted)); code only: \(emitted.subtracting(specified))")
    }
}
