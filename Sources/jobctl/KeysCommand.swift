import ArgumentParser
import CommandLineSupport
import Foundation
import JobAPI
import JobctlCore
import Queue

extension APIScope: ExpressibleByArgument {}

struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "API keys for `jobctl serve`: create (printed once), list, revoke.",
        discussion: """
            Keys live in the job database, so every `jobctl serve` in front of it knows them. Only \
            a SHA-256 of a key's secret is stored: a lost key cannot be shown again; revoke it and \
            create another. Scopes: read (its own jobs), submit (also submits, cancels and \
            retries them), admin (every job, the CLI's included). docs/api.md.
            """,
        subcommands: [Create.self, List.self, Revoke.self]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a key and print it (the only time it is shown)."
        )

        @Option(help: "A name to recognise the key by (who or what uses it).")
        var name: String

        @Option(help: "What the key may do: read, submit or admin.")
        var scope: APIScope = .submit

        @Option(
            help: ArgumentHelp(
                "The highest priority the key's jobs may have (default 0, the default priority; admin keys: any).",
                valueName: "n"
            )
        )
        var maxPriority = 0

        @Flag(help: "Print JSON: the key's record and, once, `key`.")
        var json = false

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var global: GlobalOptions

        func validate() throws {
            let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty, trimmed.count <= 100, !name.contains(where: \.isNewline) else {
                throw ValidationError("--name is 1 to 100 characters on one line")
            }
            guard (-1000...1000).contains(maxPriority) else {
                throw ValidationError("--max-priority is between -1000 and 1000")
            }
        }

        func run() async throws {
            _ = global.bootstrapLogging()
            try await reportingFailures {
                let made = APIKeys.make(name: name, scope: scope, maxPriority: maxPriority)
                try await KeysCommand.withKeys(database) {
                    try await $0.createAPIKey(made.key, secretHash: made.secretHash)
                }
                if json {
                    struct Created: Encodable {
                        let id, name, key: String
                        let scope: APIScope
                        let createdAt: Date
                        let maxPriority: Int
                    }
                    return try JobFormatting.printJSON(
                        Created(
                            id: made.key.id,
                            name: made.key.name,
                            key: made.text,
                            scope: made.key.scope,
                            createdAt: made.key.createdAt,
                            maxPriority: made.key.maxPriority
                        )
                    )
                }
                print(made.text)
                Terminal.printError(
                    "created key \(made.key.id) (\(made.key.scope.rawValue)) for \(made.key.name): store it now, it is not shown again"
                )
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every key: id, scope, name, created, revoked.")

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            _ = global.bootstrapLogging()
            try await reportingFailures {
                let keys = try await KeysCommand.withKeys(database) { try await $0.apiKeys() }
                if json { return try JobFormatting.printJSON(keys) }
                if keys.isEmpty { Terminal.printError("no API keys (jobctl keys create --name NAME makes one)") }
                for key in keys {
                    let state = key.revokedAt.map { "revoked \(Job.timestamp($0))" } ?? "active"
                    let priority = key.scope == .admin ? "any" : "≤ \(key.maxPriority)"
                    print(
                        Terminal.shown(
                            "\(key.id)  \(key.scope.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0))  priority \(priority)  created \(Job.timestamp(key.createdAt))  \(state)  \(key.name)"
                        )
                    )
                }
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a key: refused (401) by every server within 2 s."
        )

        @Argument(help: "The key's id (the 12 hex digits after jck_), or the whole key.")
        var id: String

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            _ = global.bootstrapLogging()
            try await reportingFailures {
                let id = APIKeys.parse(Substring(self.id))?.id ?? self.id
                let revoked = try await KeysCommand.withKeys(database) { try await $0.revokeAPIKey(id: id, at: Date()) }
                guard revoked else {
                    throw CommandFailure.failed(code: .keyNotFound, "no active API key \(id) (jobctl keys list)")
                }
                Terminal.printError("revoked key \(id)")
            }
        }
    }

    static func withKeys<T>(_ database: DatabaseOptions, _ body: (any APIKeyStore) async throws -> T) async throws -> T
    {
        try await database.withStore(body)
    }
}
