import GraphVersions
import Testing

@testable import GraphEmulator

/// The emulator's own decoders and encoders (no sockets).
@Suite("Coding")
struct CodingTests {
    @Test func strictPercentDecoding() {
        #expect(FormCoding.percentDecode("a%20b+c", plusIsSpace: true) == "a b c")
        #expect(FormCoding.percentDecode("a+b", plusIsSpace: false) == "a+b")
        #expect(FormCoding.percentDecode("%C3%A9", plusIsSpace: true) == "é")
        #expect(FormCoding.percentDecode("%zz", plusIsSpace: true) == nil)
        #expect(FormCoding.percentDecode("%4", plusIsSpace: true) == nil)
        #expect(FormCoding.percentDecode("%E9", plusIsSpace: true) == nil)
        let pairs = FormCoding.parse("a=1&&b=&c&d=x%3Dy")
        #expect(pairs?.map(\.0) == ["a", "b", "c", "d"])
        #expect(pairs?.value("d") == "x=y")
        #expect(FormCoding.encode("Permissions error/é") == "Permissions+error%2F%C3%A9")
    }

    @Test func jsonWritingLikeGraph() {
        let value: JSONValue = .object([
            ("url", .string("https://x/y")), ("name", .string("Zoë \"Z\"")), ("n", .int(-3)), ("ok", .bool(true)),
            ("none", .null), ("list", .array([.double(1.5), .double(2)])),
        ])
        #expect(
            value.text == #"{"url":"https:\/\/x\/y","name":"Zo\u00eb \"Z\"","n":-3,"ok":true,"none":null,"#
                + #""list":[1.5,2]}"#)
        #expect(JSONValue.parse(value.bytes)?["name"]?.stringValue == "Zoë \"Z\"")
    }

    @Test func strictJSONParsing() {
        #expect(JSONValue.parse(Array(#"{"a":[1,2.5,"x\u00e9",true,null,{}]}"#.utf8))?["a"]?.arrayValue?.count == 6)
        #expect(JSONValue.parse(Array(#" "text" "#.utf8)) == .string("text"))
        for bad in [#"{"a":1,}"#, "[1 2]", "{'a':1}", "01", "1.", #""\x""#, "{} {}", "[", "nul", #"{"a" 1}"#] {
            #expect(JSONValue.parse(Array(bad.utf8)) == nil, "\(bad)")
        }
        #expect(JSONValue.parse([0x22, 0xFF, 0x22]) == nil)
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(JSONValue.parse(Array(deep.utf8)) == nil)
    }

    @Test func fieldSyntax() throws {
        let fields = try FieldSelection.parse("id, picture.width(200).height(100){url,width},email").get()
        #expect(fields.map(\.name) == ["id", "picture", "email"])
        #expect(fields[1].modifiers == ["width": "200", "height": "100"])
        #expect(fields[1].subfields?.map(\.name) == ["url", "width"])
        for bad in ["id,", "picture.type(", "picture{url", "a b", "(x)"] {
            #expect(throws: GraphError.self, "\(bad)") { try FieldSelection.parse(bad).get() }
        }
    }

    @Test func versions() throws {
        let table = try GraphVersionTable(parsing: "v25.0 2026-02-18 -\nv22.0 2025-01-21 2027-05-20\nv21.0 2024-10-02 2027-01-21")
        let day = try #require(CalendarDay("2026-12-07"))
        #expect(PathVersion("v22.0")?.served(by: table, on: day) == "v22.0")
        #expect(PathVersion("v2.12")?.served(by: table, on: day) == "v21.0")
        #expect(PathVersion("v20.0")?.served(by: table, on: day) == "v21.0")
        #expect(PathVersion("v21.0")?.served(by: table, on: day.adding(days: 46)) == "v22.0")
        #expect(PathVersion("v2.80")?.served(by: table, on: day) == nil)
        #expect(PathVersion("v23.5")?.served(by: table, on: day) == nil)
        #expect(PathVersion("v99.0")?.served(by: table, on: day) == nil)
        #expect(PathVersion("me") == nil && PathVersion("v2") == nil)
    }

    @Test func pngChecksums() {
        #expect(PNGImage.crc32(Array("IEND".utf8)) == 0xAE42_6082)
        #expect(PNGImage.adler32(Array("Wikipedia".utf8)) == 0x11E6_0398)
        let png = PNGImage.avatar(userID: "1", width: 3, height: 2)
        #expect(Array(png.prefix(8)) == PNGImage.signature)
    }
}
