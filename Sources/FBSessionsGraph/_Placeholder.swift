// Placeholder until the module lands; delete when it has real files.
enum _PlaceholderFBSessionsGraph {}
