/// A matched path's decoded parameters by name, in the template's order.
///
/// Every route has at most two parameters, so they are kept as a short list searched by name rather than a
/// dictionary: a dictionary cost an allocation and a hash of each name per request, and another hash per read.
public struct PathParameters: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    public typealias Element = (key: String, value: String)

    private var pairs: [Element]

    /// No parameters.
    public init() {
        pairs = []
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        pairs = []
        for (name, value) in elements { self[name] = value }
    }

    /// The value of the parameter `name`, if the template has it; setting a name again replaces its value.
    public subscript(_ name: String) -> String? {
        get { pairs.first { $0.key == name }?.value }
        set {
            pairs.removeAll { $0.key == name }
            if let newValue { pairs.append((name, newValue)) }
        }
    }

    /// How many parameters there are.
    public var count: Int { pairs.count }

    public func makeIterator() -> IndexingIterator<[Element]> {
        pairs.makeIterator()
    }

    public static func == (lhs: PathParameters, rhs: PathParameters) -> Bool {
        lhs.pairs.count == rhs.pairs.count && lhs.pairs.allSatisfy { rhs[$0.key] == $0.value }
    }
}
