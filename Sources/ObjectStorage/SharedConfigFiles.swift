import Foundation

/// The AWS shared files users already have: `~/.aws/credentials` (sections named by profile)
/// and `~/.aws/config` (`[default]`, `[profile NAME]`), or the files `AWS_SHARED_CREDENTIALS_FILE`
/// and `AWS_CONFIG_FILE` name. Only the settings jobctl uses are read.
public struct SharedConfigFiles: Sendable, Hashable {
    /// The chosen profile's settings from both files (the credentials file wins on a clash).
    public var settings: [String: String]
    public var profile: String

    public init(settings: [String: String], profile: String) {
        self.settings = settings
        self.profile = profile
    }

    /// The profile `AWS_PROFILE` names (else `default`) from the files the environment names
    /// (else those under `home`). A missing file is no error; an unreadable one is.
    public static func load(environment: [String: String], home: String) throws(S3Error) -> SharedConfigFiles {
        let profile = environment["AWS_PROFILE"].flatMap { $0.isEmpty ? nil : $0 } ?? "default"
        let credentialsPath = environment["AWS_SHARED_CREDENTIALS_FILE"] ?? "\(home)/.aws/credentials"
        let configPath = environment["AWS_CONFIG_FILE"] ?? "\(home)/.aws/config"
        var settings: [String: String] = [:]
        if let config = try read(configPath) {
            let section = profile == "default" ? "default" : "profile \(profile)"
            settings.merge(parse(config)[section] ?? [:]) { _, new in new }
        }
        if let credentials = try read(credentialsPath) {
            settings.merge(parse(credentials)[profile] ?? [:]) { _, new in new }
        }
        return SharedConfigFiles(settings: settings, profile: profile)
    }

    private static func read(_ path: String) throws(S3Error) -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw S3Error(.configuration, "\(path) cannot be read")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// `[section]` headers and `key = value` lines; `#` and `;` start comments; indented lines
    /// (nested settings such as `s3 =` blocks) are skipped. Keys in lowercase.
    static func parse(_ text: String) -> [String: [String: String]] {
        var sections: [String: [String: String]] = [:]
        var current: String?
        for raw in text.split(whereSeparator: \.isNewline) {
            if raw.first == " " || raw.first == "\t" { continue }
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                current = String(line.dropFirst().dropLast()).trimmingCharacters(in: .whitespaces)
                    .split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
                continue
            }
            guard let section = current, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            sections[section, default: [:]][key] = value
        }
        return sections
    }
}
