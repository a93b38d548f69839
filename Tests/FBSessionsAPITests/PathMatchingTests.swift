import Foundation
import Testing

@testable import FBSessionsAPI

/// The one path matcher (``PathTemplate/match(_:)``), over the path's bytes: what each awkward path matches, with
/// each parameter decoded on its own.
@Suite struct PathMatchingTests {
    private func describe(_ match: PathTemplate.Match) -> String {
        switch match {
        case .noMatch: "no match"
        case .badEncoding: "bad encoding"
        case .matched(let parameters): "matched " + parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        }
    }

    @Test(arguments: [
        ("/v1/sessions/{id}", "/v1/sessions/ses_1", "matched id=ses_1"),
        ("/v1/sessions/{id}", "/v1/sessions/", "no match"),
        ("/v1/sessions/{id}", "/v1/sessions", "no match"),
        ("/v1/sessions/{id}", "/v1/sessions/ses_1/", "no match"),
        ("/v1/sessions/{id}", "v1/sessions/ses_1", "no match"),
        ("/v1/sessions/{id}", "/v1/sessions/%", "bad encoding"),
        ("/v1/sessions/{id}", "/v1/sessions/%4", "bad encoding"),
        ("/v1/sessions/{id}/token", "/v1/sessions//token", "no match"),
        ("/v1/owners/{owner}/sessions", "/v1/owners/a%2Fb%40c/sessions", "matched owner=a/b@c"),
        ("/v1/owners/{owner}/sessions", "/v1/owners/%zz/sessions", "bad encoding"),
        ("/v1/owners/{owner}/sessions", "/v1/owners/%ff%fe/sessions", "bad encoding"),
        ("/v1/owners/{owner}/sessions", "/v1/owners/%zz/sessions/x", "no match"),
        ("/v1/owners/{owner}/sessions", "/v1/owners/é/sessions", "matched owner=é"),
        ("/v1/owners/{owner}/sessions", "/v1/owners/%C3%A9/sessions", "matched owner=é"),
        ("/v1/owners/{owner}/sessions", "/v1/owners/a+b/sessions", "matched owner=a+b"),
        ("/v1/K", "/v1/K", "matched "),
        ("/v1/K", "/v1/\u{212A}", "no match"),
        ("/v1/K", "/v1/k", "no match"),
        ("/v1/K", "/v1/%4B", "no match"),
        ("/healthz", "/healthz/", "no match"),
        ("/healthz", "/healthzz", "no match"),
        ("/v1/{a}/{b}", "/v1/x/y", "matched a=x&b=y"),
        ("/v1/{a}/{b}", "/v1/x//", "no match"),
        ("/v1/{a}/{b}", "/v1/%zz/y", "bad encoding"),
        // A slash followed by a combining mark is still a slash: paths are bytes, not characters.
        ("/v1/{a}/{b}", "/v1/x/\u{301}y", "matched a=x&b=\u{301}y"),
        ("/v1/sessions", "/\u{301}v1/sessions", "no match"),
    ])
    func aPathMatches(template: String, path: String, expected: String) {
        #expect(describe(PathTemplate(template).match(path)) == expected)
    }

    @Test func theFuzzersPathsNeverTrapAndMatchOnlyTheirOwnShape() throws {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz/Corpus/FuzzPathQuery")
        let template = PathTemplate("/v1/owners/{owner}/sessions")
        for file in (try? FileManager.default.contentsOfDirectory(at: corpus, includingPropertiesForKeys: nil)) ?? [] {
            let target = String(decoding: try Data(contentsOf: file), as: UTF8.self)
            let path = String(target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
            if case .matched = template.match(path) {
                #expect(path.hasPrefix("/v1/owners/") && path.hasSuffix("/sessions"), "\(path)")
                #expect(PathTemplate.segmentCount(of: path) == 4)
            }
        }
    }
}

/// The one query parser (``QueryString/parse(_:)``), over the query's bytes.
@Suite struct QueryParsingTests {
    private static func show(_ pairs: [(name: String, value: String)]?) -> String {
        pairs.map { $0.map { "[\($0.name)]=[\($0.value)]" }.joined(separator: " ") } ?? "malformed"
    }

    @Test(arguments: [
        ("", ""), ("&", ""), ("&&", ""), ("=", "[]=[]"), ("a", "[a]=[]"), ("a=", "[a]=[]"), ("=b", "[]=[b]"),
        ("a=b", "[a]=[b]"), ("a=b&", "[a]=[b]"), ("&a=b", "[a]=[b]"), ("a=b&&c=d", "[a]=[b] [c]=[d]"),
        ("a==b", "[a]=[=b]"), ("a=b=c", "[a]=[b=c]"), ("validate=auto", "[validate]=[auto]"), ("a=%20", "[a]=[ ]"),
        ("a=%2", "malformed"), ("a=%zz", "malformed"), ("a+b=c+d", "[a b]=[c d]"), ("%41=%42", "[A]=[B]"),
        ("a=%ff%fe", "malformed"), ("a=%C3%A9", "[a]=[é]"), ("&=&", "[]=[]"), ("x=1&x=2", "[x]=[1] [x]=[2]"),
        ("validate=auto&x=%C3%A9+1", "[validate]=[auto] [x]=[é 1]"), ("a=\u{E9}&b", "[a]=[é] [b]=[]"),
        ("a=\u{301}&b=c", "[a]=[\u{301}] [b]=[c]"),
    ])
    func aQueryParses(query: String, expected: String) {
        #expect(Self.show(QueryString.parse(query)) == expected)
    }

    @Test func randomQueriesWithoutEscapesSplitAtEveryAmpersandAndFirstEquals() {
        let alphabet = Array("ab=&c")
        for _ in 0..<3000 {
            let query = String((0..<Int.random(in: 0...12)).map { _ in alphabet.randomElement()! })
            let expected = query.split(separator: "&").map { part -> String in
                let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return "[\(pieces[0])]=[\(pieces.count > 1 ? String(pieces[1]) : "")]"
            }.joined(separator: " ")
            #expect(Self.show(QueryString.parse(query)) == expected, "\(query)")
        }
    }
}
