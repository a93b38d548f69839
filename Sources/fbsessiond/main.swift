import Foundation
import HTTPServer

// Everything lives in other files: code here is main-actor code, and nothing a C library calls may be.
// Two malloc arenas, set before any other thread starts (docs/performance.md, memory).
ProcessMemory.limitArenas(2)
exit(await CommandLineTool.main(Array(CommandLine.arguments.dropFirst())))
