import HTTPServer
import Testing

/// Field names are matched ignoring ASCII case only (RFC 9110 §5.1), byte for byte.
@Suite struct HTTPHeadersTests {
    @Test func namesMatchIgnoringASCIICaseOnly() {
        var headers: HTTPHeaders = ["content-TYPE": "application/json", "X-Request-Id": "abc"]
        headers.add("X-Request-Id", "def")
        headers.add("[ull", "bracket")
        headers.add("Ünïcode", "u")
        #expect(headers["Content-Type"] == "application/json")
        #expect(headers["CONTENT-type"] == "application/json")
        #expect(headers["x-request-id"] == "abc", "the first of several")
        #expect(headers.values(for: "X-REQUEST-ID") == ["abc", "def"])
        #expect(headers["Content-Typ"] == nil && headers["Content-Types"] == nil, "lengths differ")
        #expect(headers["{ULL"] == nil, "`[` and `{` differ by the case bit but are not letters")
        #expect(headers["[ULL"] == "bracket")
        #expect(headers["üNÏCODE"] == nil, "only ASCII letters fold")
        #expect(headers["Ünïcode"] == "u")
        #expect(headers.contains("content-type") && !headers.contains("content-length"))
    }
}
