import Foundation

// Everything lives in other files: code here is main-actor code, and nothing a C library calls may be.
exit(await CommandLineTool.main(Array(CommandLine.arguments.dropFirst())))
