import FBSessionsAPI
import FBSessionsCore
import FBSessionsService
import Foundation
import HTTPServer
import Support
import Testing
import TestSupport

/// The spec as served (its `servers` naming `FBS_PUBLIC_URL`, YAML or plain text as asked), and the spec's error
/// schema declaring every member the API's error bodies carry.
@Suite struct OpenAPIDocumentTests {
    static let file = Array(
        """
        openapi: 3.1.0
        info:
          title: t
        servers:
          - url: http://127.0.0.1:8080
        paths: {}

        """.utf8)

    @Test func servedServersNameThePublicURL() throws {
        let served = String(decoding: OpenAPIDocument.serving(Self.file, publicURL: "https://sessions.example.com/"), as: UTF8.self)
        #expect(served.contains("servers:\n  - url: \"https://sessions.example.com\"\n"))
        #expect(!served.contains("127.0.0.1:8080"))
        // Everything else is kept, byte for byte.
        #expect(served.replacingOccurrences(of: "\"https://sessions.example.com\"", with: "http://127.0.0.1:8080")
            == String(decoding: Self.file, as: UTF8.self))
        let odd = String(decoding: OpenAPIDocument.serving(Self.file, publicURL: "http://h/a\"b\\c"), as: UTF8.self)
        #expect(odd.contains(#"  - url: "http://h/a\"b\\c""#))
        let none = Array("openapi: 3.1.0\npaths: {}\n".utf8)
        #expect(OpenAPIDocument.serving(none, publicURL: "http://x") == none)
    }

    @Test func theRealSpecHasTheServersLineThatIsReplaced() throws {
        let spec = Array(try SpecConformanceTests.specText().utf8)
        let served = String(decoding: OpenAPIDocument.serving(spec, publicURL: "http://10.1.2.3:9999"), as: UTF8.self)
        #expect(served.contains("\nservers:\n  - url: \"http://10.1.2.3:9999\"\n"))
    }

    @Test func theSpecIsYAMLUnlessPlainTextIsPreferred() {
        let yaml = "application/yaml; charset=utf-8"
        let text = "text/plain; charset=utf-8"
        let cases: [(String?, String)] = [
            (nil, yaml), ("*/*", yaml), ("application/yaml", yaml), ("text/plain", text), ("text/*", text),
            ("application/yaml, text/plain;q=0.5", yaml), ("text/plain, application/yaml;q=0.9", text),
            ("text/plain;q=0.2, */*;q=0.1", text), ("text/plain;q=0.1, */*", yaml), ("text/html", yaml),
        ]
        for (accept, expected) in cases {
            #expect(OpenAPIDocument.contentType(accept: accept) == expected, "\(accept ?? "none")")
        }
    }

    @Test func theRouteServesWhatItWasGiven() async throws {
        let document = OpenAPIDocument.serving(Self.file, publicURL: "http://127.0.0.1:4321")
        let router = try ServiceRoutes.inMemory { $0.openAPIDocument = document }.router
        let yaml = await RouteCaller.call(router, "GET", "/openapi.yaml")
        #expect(yaml.status == 200 && yaml.headers["Content-Type"] == "application/yaml; charset=utf-8")
        #expect(yaml.body == document)
        let text = await RouteCaller.call(router, "GET", "/openapi.yaml", headers: ["Accept": "text/plain"])
        #expect(text.headers["Content-Type"] == "text/plain; charset=utf-8" && text.body == document)
    }

    /// The members `components.schemas.ErrorDetail.properties` declares, read from the spec's text (two-space
    /// indents; one property per line at eight spaces).
    static func declaredErrorMembers(_ text: String) -> Set<String> {
        guard let start = text.range(of: "\n    ErrorDetail:\n") else { return [] }
        var members: Set<String> = []
        var inProperties = false
        for line in text[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "      properties:" { inProperties = true; continue }
            guard inProperties else { continue }
            if let match = line.wholeMatch(of: #/        ([a-z_]+):.*/#) {
                members.insert(String(match.1))
            } else if !line.hasPrefix("         ") {
                break
            }
        }
        return members
    }

    @Test func everyMemberOfAnErrorBodyIsDeclared() throws {
        let declared = Self.declaredErrorMembers(try SpecConformanceTests.specText())
        #expect(declared.isSuperset(of: ["code", "message", "request_id", "field", "graph"]), "\(declared)")
        var graphError = APIError.from(GraphError.invalidToken(.tokenExpired, GraphErrorDetail(code: 190, subcode: 463, message: "x")))
        graphError.extra["field"] = "access_token"
        let errors: [APIError] = [
            APIError.invalid("slot must be between 0 and 7.", field: "slot"),
            APIError.from(PictureError.refused(.host)), APIError.from(PictureError.unavailable(.timeout)),
            APIError.from(LoginFlowError.alreadyLinked(sessionID: "ses_AAAAAAAAAAAAAAAAAAAAAA", slot: 2)),
            graphError, APIError.from(SessionError.notFound),
        ]
        for error in errors {
            let body = try #require(
                try JSONSerialization.jsonObject(with: Data(error.response(requestID: "r-1").body)) as? [String: Any])
            let members = Set((body["error"] as? [String: Any] ?? [:]).keys)
            #expect(members.isSubset(of: declared), "\(error.code.rawValue): undeclared \(members.subtracting(declared))")
        }
    }
}
