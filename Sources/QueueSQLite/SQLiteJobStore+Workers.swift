import Foundation
import GRDB
import Queue

// The workers table.
extension SQLiteJobStore {
    // MARK: Workers

    public func workerStarted(_ worker: WorkerIdentity) async throws {
        let now = self.now
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO workers (name, host, pid, version, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (name) DO UPDATE SET host = excluded.host, pid = excluded.pid, version = excluded.version,
                        started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, stopped_at = NULL
                    """,
                arguments: [worker.name, worker.host, worker.pid, worker.version, now, now]
            )
        }
    }

    public func workerHeartbeat(_ worker: WorkerIdentity) async throws {
        let now = self.now
        try await write { db in
            try db.execute(sql: "UPDATE workers SET heartbeat_at = ? WHERE name = ?", arguments: [now, worker.name])
        }
    }

    public func workerStopped(_ worker: WorkerIdentity) async throws {
        let now = self.now
        try await write { db in
            try db.execute(
                sql: "UPDATE workers SET stopped_at = ?, heartbeat_at = ? WHERE name = ?",
                arguments: [now, now, worker.name]
            )
        }
    }

    public func workers() async throws -> [WorkerInfo] {
        try await read { db in
            let running = try Row.fetchAll(
                db,
                sql: "SELECT worker, id FROM jobs WHERE status = 'reading' ORDER BY started_at"
            )
            var jobs: [String: [JobID]] = [:]
            for row in running { jobs[row["worker"] as String? ?? "", default: []].append(JobID(row["id"] as String)) }
            return try Row.fetchAll(
                db,
                sql:
                    "SELECT name, host, pid, version, started_at, heartbeat_at, stopped_at FROM workers ORDER BY heartbeat_at DESC, name"
            )
            .map { row in
                WorkerInfo(
                    name: row["name"],
                    host: row["host"],
                    pid: row["pid"],
                    version: row["version"],
                    startedAt: Date(milliseconds: row["started_at"]),
                    heartbeatAt: Date(milliseconds: row["heartbeat_at"]),
                    stoppedAt: (row["stopped_at"] as Int64?).map(Date.init(milliseconds:)),
                    runningJobs: jobs[row["name"]] ?? []
                )
            }
        }
    }
}
