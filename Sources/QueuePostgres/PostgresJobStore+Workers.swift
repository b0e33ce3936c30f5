import Foundation
import Logging
import PostgresNIO
import Queue

// The workers table.
extension PostgresJobStore {
    // MARK: Workers

    public func workerStarted(_ worker: WorkerIdentity) async throws {
        try await transaction { connection in
            let now = try await self.currentTime(connection)
            try await connection.query(
                """
                INSERT INTO jobctl.workers (name, host, pid, version, started_at, heartbeat_at)
                VALUES (\(worker.name), \(worker.host), \(Int(worker.pid)), \(worker.version), \(now), \(now))
                ON CONFLICT (name) DO UPDATE SET host = excluded.host, pid = excluded.pid, version = excluded.version,
                    started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, stopped_at = NULL
                """,
                logger: self.logger
            )
        }
    }

    public func workerHeartbeat(_ worker: WorkerIdentity) async throws {
        _ = try await withConnection { connection in
            try await connection.query(
                "UPDATE jobctl.workers SET heartbeat_at = \(unescaped: self.nowSQL) WHERE name = \(worker.name)",
                logger: self.logger
            )
        }
    }

    public func workerStopped(_ worker: WorkerIdentity) async throws {
        _ = try await withConnection { connection in
            try await connection.query(
                """
                UPDATE jobctl.workers SET stopped_at = \(unescaped: self.nowSQL),
                    heartbeat_at = \(unescaped: self.nowSQL) WHERE name = \(worker.name)
                """,
                logger: self.logger
            )
        }
    }

    public func workers() async throws -> [WorkerInfo] {
        try await withConnection { connection in
            var jobs: [String: [JobID]] = [:]
            for try await (worker, id) in try await connection.query(
                "SELECT worker, id FROM jobctl.jobs WHERE status = 'reading' ORDER BY started_at",
                logger: self.logger
            ).decode((String?, String).self) { jobs[worker ?? "", default: []].append(JobID(id)) }
            var workers: [WorkerInfo] = []
            for try await (name, host, pid, version, started, heartbeat, stopped) in try await connection.query(
                "SELECT name, host, pid, version, started_at, heartbeat_at, stopped_at FROM jobctl.workers ORDER BY heartbeat_at DESC, name",
                logger: self.logger
            ).decode((String, String, Int, String, Int64, Int64, Int64?).self) {
                workers.append(
                    WorkerInfo(
                        name: name,
                        host: host,
                        pid: Int32(pid),
                        version: version,
                        startedAt: Date(milliseconds: started),
                        heartbeatAt: Date(milliseconds: heartbeat),
                        stoppedAt: stopped.map(Date.init(milliseconds:)),
                        runningJobs: jobs[name] ?? []
                    )
                )
            }
            return workers
        }
    }
}
