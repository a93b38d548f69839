import Foundation

/// Dispatches subcommands and turns failures into exit statuses: 0 done, 1 failed, 2 wrong usage or settings.
enum CommandLineTool {
    static func main(_ words: [String]) async -> Int32 {
        guard let command = words.first, command != "--help", command != "-h", command != "help" else {
            print(Help.main)
            return words.isEmpty ? 2 : 0
        }
        do {
            let arguments = try Arguments(Array(words.dropFirst()))
            switch command {
            case "serve":
                if arguments.flag("help") { print(Help.serve); return 0 }
                let runtime = try Runtime(settings: try Runtime.settings())
                try await ServiceHost.serve(runtime)
            case "run":
                if arguments.flag("help") { print(Help.run); return 0 }
                try await RunCommand.run()
            case "migrate":
                try await AdminCommands.migrate(arguments)
            case "app":
                try await AdminCommands.app(arguments)
            case "key":
                try await AdminCommands.key(arguments)
            case "webhook":
                try await WebhookCommands.run(arguments)
            case "graph-emulator":
                try await EmulatorCommand.run(arguments)
            case "sweep":
                try await SweepCommand.run(arguments)
            case "reencrypt":
                try await ReencryptCommand.run(arguments)
            default:
                throw UsageError("unknown command \(command); see fbsessiond --help")
            }
            return 0
        } catch let error as UsageError {
            printError(error.description)
            return 2
        } catch {
            printError(String(describing: error))
            return 1
        }
    }

    static func printError(_ text: String) {
        FileHandle.standardError.write(Data("fbsessiond: \(text)\n".utf8))
    }
}

/// The module's `print`: each call is one `write(2)` on standard output, so lines reach a pipe or a file as they
/// are printed (Swift's own `print` buffers when standard output is not a terminal).
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    let text = items.map { String(describing: $0) }.joined(separator: separator) + terminator
    FileHandle.standardOutput.write(Data(text.utf8))
}
