/// A value read back from the job database as text (a status, a kind). A value this version
/// of jobctl does not know — written by a newer version, or a damaged row — is an error that
/// names the job and the column, never a guess: `?? .unknown` would turn a damaged row into a
/// queued job that a worker then runs.
public enum StoredValue {
    public static func decode<Value: RawRepresentable>(
        _ raw: String,
        as type: Value.Type = Value.self,
        column: String,
        row: @autoclosure () -> String
    ) throws -> Value where Value.RawValue == String {
        guard let value = Value(rawValue: raw) else {
            throw JobStoreError(
                .databaseCorrupt,
                "\(row()) has \(column) '\(raw.prefix(40))', which this version of jobctl does not know (a newer jobctl wrote it, or the row is damaged)"
            )
        }
        return value
    }
}
