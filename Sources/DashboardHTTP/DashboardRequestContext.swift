import Dashboard
import Foundation
import Hummingbird
import JobAPI
import NIOCore

/// The request context of the dashboard's `/ui` group: the API's context, as the global
/// middleware left it, with where the page is (`links`) and who is signed in (`session`, set
/// by the group's `DashboardSessions`; `nil` on the sign-in page and the assets).
package struct DashboardRequestContext: ChildRequestContext, RemoteAddressRequestContext, HeadRequestContext {
    package typealias ParentContext = APIRequestContext

    package var coreContext: CoreRequestContextStorage
    package let remoteAddress: SocketAddress?
    /// Completes when the connection closes (a page's event stream then gives up its watch).
    let connectionClosed: EventLoopFuture<Void>?
    package var isHead: Bool
    /// Every link of the page, from where its route is below `/ui`.
    package let links: DashboardLinks
    /// The signed-in session, for the routes behind `DashboardSessions`.
    package var session: DashboardRoutes.Session?

    package init(context: APIRequestContext) throws {
        coreContext = context.coreContext
        remoteAddress = context.remoteAddress
        connectionClosed = context.connectionClosed
        isHead = context.isHead
        links = DashboardLinks(route: context.endpointPath ?? "/ui")
    }

    /// A form is small: as the API's bodies (`DashboardRoutes.formLimit`).
    package var maxUploadSize: Int { DashboardRoutes.formLimit }
}
