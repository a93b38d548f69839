import Foundation
import Testing

@testable import FBSessionsAPI

/// The byte matcher (``PathTemplate/match(ascii:)``) answers what the split-path matcher answered, for the
/// product's templates and awkward paths: empty segments, trailing slashes, bad and good percent-encoding,
/// non-ASCII bytes, a Kelvin sign (canonically equal to `K`).
@Suite struct PathMatchingTests {
    static let templates = [
        "/healthz", "/v1/sessions", "/v1/sessions/{id}", "/v1/sessions/{id}/token", "/v1/owners/{owner}/sessions",
        "/v1/owners/{owner}/active", "/v1/K", "/v1/{a}/{b}",
    ].map(PathTemplate.init)

    static let paths = [
        "", "/", "//", "/healthz", "/healthz/", "/healthzz", "/v1/sessions", "/v1/sessions/", "/v1/sessions/ses_1",
        "/v1/sessions/ses_1/token", "/v1/sessions//token", "/v1/owners/a%2Fb%40c/sessions", "/v1/owners/%zz/sessions",
        "/v1/owners/%ff%fe/sessions", "/v1/owners/%zz/sessions/x", "/v1/owners/é/sessions", "/v1/owners/a+b/sessions",
        "/v1/\u{212A}", "/v1/K", "/v1/k", "/v1/%4B", "healthz", "/v1/sessions/%", "/v1/sessions/%4", "/v1/x/y",
        "/v1/%zz/y", "/v1/x/%zz", "/v1/x//", "/\u{301}v1/sessions",
    ]

    @Test func byteMatcherAgreesWithTheSplitMatcher() throws {
        var paths = Self.paths
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz/Corpus/FuzzPathQuery")
        for file in (try? FileManager.default.contentsOfDirectory(at: corpus, includingPropertiesForKeys: nil)) ?? [] {
            let target = String(decoding: try Data(contentsOf: file), as: UTF8.self)
            paths.append(String(target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""))
        }
        for template in Self.templates {
            for path in paths {
                let reference: PathTemplate.Match =
                    path.hasPrefix("/") ? template.match(segments: PathTemplate.segments(of: path)) : .noMatch
                #expect(describe(template.match(path)) == describe(reference), "\(template) vs \(path)")
            }
        }
    }

    private func describe(_ match: PathTemplate.Match) -> String {
        switch match {
        case .noMatch: "no match"
        case .badEncoding: "bad encoding"
        case .matched(let parameters): "matched " + parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        }
    }
}

/// The byte parser of ASCII queries (``QueryString/parse(ascii:)``) answers what splitting the string answers: for
/// awkward queries, the fuzzer's corpus, and random ones made of the characters that matter.
@Suite struct QueryParsingTests {
    static let queries = [
        "", "&", "&&", "=", "a", "a=", "=b", "a=b", "a=b&", "&a=b", "a=b&&c=d", "a==b", "a=b=c", "validate=auto",
        "a=%20", "a=%2", "a=%zz", "a+b=c+d", "%41=%42", "a=%ff%fe", "a=%C3%A9", "&=&", "x=1&x=2",
    ]

    private static func show(_ pairs: [(name: String, value: String)]?) -> String {
        pairs.map { $0.map { "[\($0.name)]=[\($0.value)]" }.joined(separator: " ") } ?? "malformed"
    }

    @Test func theByteParserAgreesWithTheSplitParser() throws {
        var queries = Self.queries
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz/Corpus/FuzzPathQuery")
        for file in (try? FileManager.default.contentsOfDirectory(at: corpus, includingPropertiesForKeys: nil)) ?? [] {
            let target = String(decoding: try Data(contentsOf: file), as: UTF8.self)
            let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2 { queries.append(String(parts[1])) }
        }
        let alphabet = Array("ab=&%+2fF0z")
        for _ in 0..<3000 {
            queries.append(String((0..<Int.random(in: 0...12)).map { _ in alphabet.randomElement()! }))
        }
        var disagreements: [String] = []
        for query in queries where query.utf8.allSatisfy({ $0 < 0x80 }) {
            let bytes = Self.show(QueryString.parse(query))
            let split = Self.show(QueryString.parseCharacters(query))
            if bytes != split { disagreements.append("\(query): \(bytes) vs \(split)") }
        }
        #expect(disagreements.isEmpty, "\(disagreements.count) disagreements: \(disagreements.prefix(5))")
        #expect(Self.show(QueryString.parse("validate=auto&x=%C3%A9+1")) == "[validate]=[auto] [x]=[é 1]")
        #expect(Self.show(QueryString.parse("a=\u{E9}&b")) == "[a]=[é] [b]=[]", "not ASCII: split")
    }
}
