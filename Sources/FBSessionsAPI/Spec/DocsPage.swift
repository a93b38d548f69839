import Crypto
import Foundation
import HTTPServer

/// The try-it page served at `GET /docs` (the `docs.html` resource beside `openapi.yaml`), with the
/// Content-Security-Policy that lets exactly its own inline `<style>` and `<script>` blocks run.
///
/// The hashes are computed once, when the page is loaded, so an edited page never needs a hand-updated policy.
public struct DocsPage: Sendable {
    /// The page's bytes, served as they are.
    public let html: [UInt8]
    /// `Content-Security-Policy`: same-origin only, inline blocks allowed by their SHA-256 and nothing else.
    public let contentSecurityPolicy: String
    /// A strong validator of the bytes (a quoted hex digest).
    public let etag: String

    /// Reads the inline blocks of `html` and builds the policy that allows them.
    /// - Parameter html: The page, UTF-8.
    public init(html: [UInt8]) {
        self.html = html
        let text = String(decoding: html, as: UTF8.self)
        let scripts = Self.inlineBlocks("script", in: text).map(Self.sourceHash)
        let styles = Self.inlineBlocks("style", in: text).map(Self.sourceHash)
        contentSecurityPolicy = [
            "default-src 'self'",
            "script-src " + (scripts.isEmpty ? "'none'" : scripts.joined(separator: " ")),
            "style-src " + (styles.isEmpty ? "'none'" : styles.joined(separator: " ")),
            "img-src 'self' blob: data:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ].joined(separator: "; ")
        etag = "\"" + SHA256.hexDigest(html).prefix(32) + "\""
    }

    /// A stand-in for services built without the resource (route tests): a page that says so.
    public static let placeholder = DocsPage(html: Array(placeholderText.utf8))

    private static let placeholderText = """
        <!doctype html><title>fbsessiond</title><p>The docs page is not installed: put docs.html beside
        openapi.yaml, or name it with FBS_DOCS_FILE. The spec is at <a href="openapi.yaml">openapi.yaml</a>.</p>

        """

    /// The text between each `<tag ...>` and the next `</tag>`, in order: what a browser hashes for CSP.
    static func inlineBlocks(_ tag: String, in text: String) -> [String] {
        var blocks: [String] = []
        var rest = text[...]
        while let open = rest.range(of: "<\(tag)", options: .caseInsensitive) {
            let afterName = rest[open.upperBound...]
            // `<scripts>` or `<style-x>` are other elements; only a space or `>` ends the tag name.
            guard let next = afterName.first, next == ">" || next == " " || next == "\n" || next == "\t" else {
                rest = afterName
                continue
            }
            guard let tagEnd = afterName.firstIndex(of: ">"),
                let close = rest[tagEnd...].range(of: "</\(tag)", options: .caseInsensitive)
            else { break }
            blocks.append(String(rest[rest.index(after: tagEnd)..<close.lowerBound]))
            rest = rest[close.upperBound...]
        }
        return blocks
    }

    private static func sourceHash(_ block: String) -> String {
        "'sha256-" + Data(SHA256.hash(block)).base64EncodedString() + "'"
    }

    /// The response to `GET /docs`, or 304 when the client's `If-None-Match` names the current bytes.
    func response(ifNoneMatch: String?) -> Response {
        var headers: HTTPHeaders = [
            "Content-Security-Policy": contentSecurityPolicy,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-cache",
            "ETag": etag,
        ]
        if let ifNoneMatch, Self.matches(ifNoneMatch, etag: etag) {
            return Response(status: 304, headers: headers)
        }
        headers.add("Content-Type", "text/html; charset=utf-8")
        return Response(status: 200, headers: headers, body: html)
    }

    /// Weak comparison of an `If-None-Match` list (or `*`) with the page's tag.
    static func matches(_ header: String, etag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            var tag = candidate.trimmingCharacters(in: .whitespaces)
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == etag
        }
    }
}

/// `GET /docs`: the page that lists the served spec's operations and sends requests from it.
enum DocsRoutes {
    static func routes(_ services: Services) -> [Route] {
        let page = services.docsPage
        return [
            /// - Remark: HTTP GET /docs (openapi.yaml operationId getDocs)
            Route("GET", "/docs", operationID: "getDocs", scope: nil, handler: .immediate { context in
                page.response(ifNoneMatch: context.request.head.headers["If-None-Match"])
            })
        ]
    }
}
