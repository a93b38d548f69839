import FBSessionsAPI
import FBSessionsCore
import FBSessionsService
import Foundation
import Support
import Testing
import TestSupport

/// `openapi.yaml` and the router must describe the same operations, and the spec's error-code list must be the
/// API's, both ways.
@Suite struct SpecConformanceTests {
    static func specText() throws -> String {
        try OpenAPISpec.specText()
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

    typealias SpecOperation = OpenAPISpec.SpecOperation

    /// Every operation under `paths:` with its security scopes (``OpenAPISpec/specSecurity(_:)``).
    static func specSecurity(_ text: String) -> [SpecOperation] {
        OpenAPISpec.specSecurity(text)
    }

    static func specErrorCodes(_ text: String) -> Set<String> {
        specEnum(text, schema: "ErrorCode")
    }

    /// The values of the `enum` of the component schema `schema` (a list of `- value` lines).
    static func specEnum(_ text: String, schema: String) -> Set<String> {
        guard let start = text.range(of: "    \(schema):\n") else { return [] }
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
        let services = try ServiceRoutes.inMemory().services
        let routed = Set(APIRoutes.all(services).map { "\($0.method) \($0.path) \($0.operationID)" })
        let specified = Self.specOperations(try Self.specText())
        #expect(!specified.isEmpty)
        #expect(routed.subtracting(specified).isEmpty, "routes missing from openapi.yaml: \(routed.subtracting(specified))")
        #expect(specified.subtracting(routed).isEmpty, "spec operations without a route: \(specified.subtracting(routed))")
    }

    @Test func everyOperationDeclaresItsSecurity() throws {
        let operations = Self.specSecurity(try Self.specText())
        #expect(operations.count == Self.specOperations(try Self.specText()).count)
        let secured = operations.filter { $0.scopes != nil }
        #expect(!secured.isEmpty && secured.allSatisfy { $0.scopes?.count == 1 }, "\(secured)")
        #expect(operations.contains { $0.operationID == "getSessionToken" && $0.scopes == ["tokens:read"] })
        #expect(operations.contains { $0.operationID == "getHealth" && $0.scopes == nil })
    }

    @Test func authenticationTokenReasonsMatchBothWays() throws {
        let specified = Self.specEnum(try Self.specText(), schema: "AuthenticationTokenInvalidReason")
        #expect(specified == Set(AuthenticationTokenError.reasons))
        #expect(AuthenticationTokenError.reasons.count == 11 && specified.contains("not_newer"))
    }

    @Test func errorCodesMatchBothWays() throws {
        let specified = Self.specErrorCodes(try Self.specText())
        let emitted = Set(ErrorCode.allCases.map(\.rawValue))
        #expect(specified == emitted, "spec only: \(specified.subtracting(emitted)); code only: \(emitted.subtracting(specified))")
    }
}
