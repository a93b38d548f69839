import Crypto
import Foundation
import HTTPServer

// Everything lives in other files: code here is main-actor code, and nothing a C library calls may be.
// Two malloc arenas, set before any other thread starts (docs/performance.md, memory).
ProcessMemory.limitArenas(2)
// OpenSSL keeps its state until the process ends: its atexit cleanup races with threads still running (Crypto).
OpenSSLLifetime.keepUntilExit()
exit(await CommandLineTool.main(Array(CommandLine.arguments.dropFirst())))
