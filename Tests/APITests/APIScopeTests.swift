import Queue
import Testing

@Suite("API scopes")
struct APIScopeTests {
    @Test("scopes are ordered read < submit < admin")
    func order() {
        #expect(APIScope.read < .submit && APIScope.submit < .admin)
    }
}
