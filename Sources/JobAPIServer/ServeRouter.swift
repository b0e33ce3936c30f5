import DashboardHTTP
import Foundation
import Hummingbird
import JobAPI
import Logging

extension APIServer {
    /// The router of `jobctl serve`, assembled from its groups (docs/architecture.md, "HTTP"):
    /// the global middleware, the open routes, the keyed group (`/v1/…`: `KeyAuthentication`),
    /// and the dashboard's `/ui` group (`DashboardRoutes`: sessions). Which checks a request
    /// passes is the group its route is in, never a test of its path.
    public static func router(_ configuration: APIConfiguration, logger: Logger) -> Router<APIRequestContext> {
        router(configuration, watch: APIRoutes.watch(configuration, logger: logger), logger: logger)
    }

    package static func router(
        _ configuration: APIConfiguration,
        watch: JobWatch,
        logger: Logger
    ) -> Router<APIRequestContext> {
        let router = Router(context: APIRequestContext.self)
        let api = APIRoutes(configuration, watch: watch, logger: logger)
        api.addGlobalMiddleware(to: router)
        let keyed = api.keyedGroup(of: router)
        api.addOpenRoutes(to: router, keyed: keyed)
        api.addVersionOne(to: keyed)
        router.group("/ui", context: DashboardRequestContext.self).addRoutes(
            DashboardRoutes(api, logger: logger).routes()
        )
        api.finish(router)
        return router
    }
}
