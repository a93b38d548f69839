/// An ordered list of HTTP header fields with case-insensitive lookup.
///
/// Names keep the spelling they were given; lookups ignore ASCII case, as RFC 9110 requires.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// One header field.
    public struct Field: Sendable, Equatable {
        /// The field name as given.
        public var name: String
        /// The field value.
        public var value: String

        /// Creates a field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    private var fields: [Field]

    /// Creates a header list from fields in order.
    public init(_ fields: [Field] = []) {
        self.fields = fields
    }

    /// Creates an empty list with room for `capacity` fields: a response that adds its fields one by one then grows
    /// its storage once.
    public init(capacity: Int) {
        fields = []
        fields.reserveCapacity(capacity)
    }

    /// Creates a header list from `name: value` pairs.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// Makes room for `capacity` fields in all.
    public mutating func reserveCapacity(_ capacity: Int) {
        fields.reserveCapacity(capacity)
    }

    /// The number of fields.
    public var count: Int { fields.count }

    /// The first value of the field `name`, ignoring ASCII case.
    public subscript(_ name: String) -> String? {
        fields.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Every value of the field `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// Appends a field, keeping any existing field of the same name.
    public mutating func add(_ name: String, _ value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field named `name` with one field.
    public mutating func replace(_ name: String, with value: String) {
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
        fields.append(Field(name: name, value: value))
    }

    /// Whether a field named `name` is present.
    public func contains(_ name: String) -> Bool {
        fields.contains { $0.name.caseInsensitiveEquals(name) }
    }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> {
        fields.makeIterator()
    }
}

extension String {
    /// ASCII case-insensitive comparison, enough for header names. On the bytes in place: every request looks up a
    /// few fields by name, and the generic `zip` over two `UTF8View`s cost more than the rest of a lookup.
    func caseInsensitiveEquals(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        var lhs = self
        var rhs = other
        return lhs.withUTF8 { a in
            rhs.withUTF8 { b in
                for index in 0..<a.count where a[index] != b[index] {
                    let folded = a[index] | 0x20
                    guard folded == b[index] | 0x20, folded >= UInt8(ascii: "a"), folded <= UInt8(ascii: "z") else {
                        return false
                    }
                }
                return true
            }
        }
    }
}
