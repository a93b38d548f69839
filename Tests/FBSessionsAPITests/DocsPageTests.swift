import Crypto
import FBSessionsAPI
import FBSessionsService
import Foundation
import HTTPServer
import Support
import Testing
import TestSupport

/// `GET /docs` over a real socket: the page from `docs.html`, served as HTML with a policy that allows exactly its
/// own inline blocks, and pointing at the served spec.
@Suite struct DocsPageTests {
    static func pageBytes() throws -> [UInt8] {
        let spec = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs.html")
        return Array(try Data(contentsOf: spec.standardized))
    }

    /// What a browser hashes: the text between `<tag>` and `</tag>`, found here independently of `DocsPage`.
    static func blocks(_ tag: String, in text: String) -> [String] {
        text.components(separatedBy: "<\(tag)>").dropFirst().compactMap {
            $0.components(separatedBy: "</\(tag)>").first
        }
    }

    static func withServer(_ page: DocsPage, _ body: @escaping @Sendable (Int) throws -> Void) async throws {
        let spec = Array(try SpecConformanceTests.specText().utf8)
        let routes = try ServiceRoutes.inMemory { parts in
            parts.openAPIDocument = spec
            parts.docsPage = page
        }
        var configuration = ServerConfiguration()
        configuration.port = 0
        let server = try Server(configuration: configuration, handler: SecretsTranscript.recording(routes.router))
        defer { server.shutdown(gracePeriod: 1) }
        let port = server.port
        try await onThread { try body(port) }
    }

    static func get(_ port: Int, _ target: String, headers: String = "") throws -> RawConnection.Reply {
        let connection = try RawConnection(port: port, timeout: 10)
        connection.send("GET \(target) HTTP/1.1\r\nHost: localhost\r\n\(headers)\r\n")
        return try connection.readReply()
    }

    @Test func servesThePageWithAStrictPolicyThatAllowsItsOwnBlocks() async throws {
        let html = try Self.pageBytes()
        try await Self.withServer(DocsPage(html: html)) { port in
            let reply = try Self.get(port, "/docs")
            #expect(reply.status == 200)
            #expect(reply.headers["content-type"] == "text/html; charset=utf-8")
            #expect(reply.headers["x-content-type-options"] == "nosniff")
            #expect(reply.headers["cache-control"] == "no-cache")
            #expect(reply.headers["x-request-id"] != nil)
            #expect(reply.body == html)
            let policy = reply.headers["content-security-policy"] ?? ""
            let directives = Set(policy.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) })
            #expect(directives.contains("default-src 'self'"))
            #expect(directives.contains("connect-src 'self'"))
            #expect(directives.contains("frame-ancestors 'none'"))
            #expect(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval") && !policy.contains("*"))
            let scripts = Self.blocks("script", in: reply.text)
            let styles = Self.blocks("style", in: reply.text)
            #expect(scripts.count == 1 && styles.count == 1)
            func hashes(_ blocks: [String]) -> String {
                blocks.map { "'sha256-" + Data(SHA256.hash($0)).base64EncodedString() + "'" }.joined(separator: " ")
            }
            #expect(directives.contains("script-src " + hashes(scripts)))
            #expect(directives.contains("style-src " + hashes(styles)))
            // The page reads the spec this service serves, and nothing from elsewhere.
            #expect(reply.text.contains("'openapi.yaml'"))
            #expect(!reply.text.contains("http://") && !reply.text.contains("https://"))
            #expect(!reply.text.contains("<script src") && !reply.text.contains("stylesheet"))

            let spec = try Self.get(port, "/openapi.yaml")
            #expect(spec.text.contains("operationId: getDocs"))

            let etag = try #require(reply.headers["etag"])
            let again = try Self.get(port, "/docs", headers: "If-None-Match: \(etag)\r\n")
            #expect(again.status == 304 && again.body.isEmpty && again.headers["etag"] == etag)
            let stale = try Self.get(port, "/docs", headers: "If-None-Match: \"0000\"\r\n")
            #expect(stale.status == 200 && stale.body == html)
        }
    }

    @Test func aPageWithoutScriptsAllowsNone() async throws {
        try await Self.withServer(.placeholder) { port in
            let reply = try Self.get(port, "/docs")
            #expect(reply.status == 200)
            let policy = reply.headers["content-security-policy"] ?? ""
            #expect(policy.contains("script-src 'none'") && policy.contains("style-src 'none'"))
        }
    }

    @Test func hashesBlocksWithAttributesAndSeveralBlocks() {
        let html = #"<style media="x">a{}</style><script>1</script><scripts></scripts><script>2</script>"#
        let page = DocsPage(html: Array(html.utf8))
        let one = Data(SHA256.hash("1")).base64EncodedString()
        let two = Data(SHA256.hash("2")).base64EncodedString()
        let style = Data(SHA256.hash("a{}")).base64EncodedString()
        #expect(page.contentSecurityPolicy.contains("script-src 'sha256-\(one)' 'sha256-\(two)';"))
        #expect(page.contentSecurityPolicy.contains("style-src 'sha256-\(style)';"))
    }
}
