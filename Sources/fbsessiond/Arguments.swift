/// A small parser for `--name value` options, repeated options, flags and positional words.
struct Arguments {
    private(set) var positional: [String] = []
    private var options: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// Parses `arguments`; `flagNames` are options without a value. `--name=value` also works.
    init(_ arguments: [String], flagNames: Set<String> = ["help"]) throws(UsageError) {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            if argument == "-h" {
                flags.insert("help")
            } else if argument.hasPrefix("--") {
                var name = String(argument.dropFirst(2))
                var value: String?
                if let equals = name.firstIndex(of: "=") {
                    value = String(name[name.index(after: equals)...])
                    name = String(name[..<equals])
                }
                if flagNames.contains(name) {
                    flags.insert(name)
                    continue
                }
                guard let given = value ?? iterator.next() else { throw UsageError("--\(name) needs a value") }
                options[name, default: []].append(given)
            } else {
                positional.append(argument)
            }
        }
    }

    /// Whether a flag was given.
    func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The last value of an option.
    func value(_ name: String) -> String? { options[name]?.last }

    /// Every value of a repeated option.
    func values(_ name: String) -> [String] { options[name] ?? [] }

    /// Option names given that are not in `known`.
    func unknown(besides known: Set<String>) -> [String] {
        options.keys.filter { !known.contains($0) }.sorted()
    }
}

/// A wrong command line; printed with the command's usage, exit status 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
