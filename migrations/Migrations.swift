/// The schema as SQL, one dialect per folder, embedded in the binary (no resource bundle to
/// ship). Migrations are named, ordered and append-only: never edit one that has shipped; add
/// the next. A test checks that every file in the folders is listed here.
public struct Migration: Sendable {
    public let name: String
    public let sql: String

    init(_ name: String, _ bytes: [UInt8]) {
        self.name = name
        self.sql = String(decoding: bytes, as: UTF8.self)
    }
}

public enum Migrations {
    public static let sqlite: [Migration] = [
        Migration("0001_jobs", PackageResources._001_jobs_sqlite_sql),
        Migration("0002_webhooks", PackageResources._002_webhooks_sqlite_sql),
        Migration("0003_api_keys", PackageResources._003_api_keys_sqlite_sql),
        Migration("0004_hardening", PackageResources._004_hardening_sqlite_sql),
        Migration("0005_job_graphs", PackageResources._005_job_graphs_sqlite_sql),
        Migration("0006_uploads", PackageResources._006_uploads_sqlite_sql),
        Migration("0007_dashboard", PackageResources._007_dashboard_sqlite_sql),
        Migration("0008_fleet", PackageResources._008_fleet_sqlite_sql),
        Migration("0009_listing", PackageResources._009_listing_sqlite_sql),
        Migration("0010_search", PackageResources._010_search_sqlite_sql),
        Migration("0011_attempts", PackageResources._011_attempts_sqlite_sql),
        Migration("0012_server_secrets", PackageResources._012_server_secrets_sqlite_sql),
        Migration("0013_roles", PackageResources._013_roles_sqlite_sql),
    ]

    public static let postgres: [Migration] = [
        Migration("0001_jobs", PackageResources._001_jobs_postgres_sql),
        Migration("0002_api_keys", PackageResources._002_api_keys_postgres_sql),
        Migration("0003_hardening", PackageResources._003_hardening_postgres_sql),
        Migration("0004_job_graphs", PackageResources._004_job_graphs_postgres_sql),
        Migration("0005_uploads", PackageResources._005_uploads_postgres_sql),
        Migration("0006_dashboard", PackageResources._006_dashboard_postgres_sql),
        Migration("0007_fleet", PackageResources._007_fleet_postgres_sql),
        Migration("0008_listing", PackageResources._008_listing_postgres_sql),
        Migration("0009_attempts", PackageResources._009_attempts_postgres_sql),
        Migration("0010_server_secrets", PackageResources._010_server_secrets_postgres_sql),
        Migration("0011_roles", PackageResources._011_roles_postgres_sql),
    ]
}
