//! Method names, parsed once into an enum so that dispatch is a `match`.

/// A method a server may receive, or `Unknown` with the name as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method<'a> {
    /// `initialize` (legacy handshake).
    Initialize,
    /// `notifications/initialized` (legacy handshake).
    Initialized,
    /// `ping` (legacy only).
    Ping,
    /// `server/discover` (modern).
    ServerDiscover,
    /// `tools/list`.
    ToolsList,
    /// `tools/call`.
    ToolsCall,
    /// `logging/setLevel` (legacy).
    LoggingSetLevel,
    /// `notifications/cancelled`.
    Cancelled,
    /// `notifications/progress` (from the client, for server-initiated requests).
    Progress,
    /// `notifications/roots/list_changed` (legacy).
    RootsListChanged,
    /// `resources/list`.
    ResourcesList,
    /// `resources/templates/list`.
    ResourceTemplatesList,
    /// `resources/read`.
    ResourcesRead,
    /// `resources/subscribe` (legacy).
    ResourcesSubscribe,
    /// `resources/unsubscribe` (legacy).
    ResourcesUnsubscribe,
    /// `resources/directory/read` (the Skills extension).
    ResourcesDirectoryRead,
    /// `skills/list` (the Skills extension).
    SkillsList,
    /// `skills/get` (the Skills extension).
    SkillsGet,
    /// `prompts/list`.
    PromptsList,
    /// `prompts/get`.
    PromptsGet,
    /// `completion/complete`.
    Complete,
    /// `subscriptions/listen` (modern).
    SubscriptionsListen,
    /// `tasks/get` (the Tasks extension, `io.modelcontextprotocol/tasks`).
    TasksGet,
    /// `tasks/update` (the Tasks extension).
    TasksUpdate,
    /// `tasks/cancel` (the Tasks extension).
    TasksCancel,
    /// Any other method; answered with -32601 when it is a request.
    Unknown(&'a str),
}

impl<'a> Method<'a> {
    /// Parses a method name.
    pub fn parse(name: &'a str) -> Self {
        match name {
            "initialize" => Self::Initialize,
            "notifications/initialized" => Self::Initialized,
            "ping" => Self::Ping,
            "server/discover" => Self::ServerDiscover,
            "tools/list" => Self::ToolsList,
            "tools/call" => Self::ToolsCall,
            "logging/setLevel" => Self::LoggingSetLevel,
            "notifications/cancelled" => Self::Cancelled,
            "notifications/progress" => Self::Progress,
            "notifications/roots/list_changed" => Self::RootsListChanged,
            "resources/list" => Self::ResourcesList,
            "resources/templates/list" => Self::ResourceTemplatesList,
            "resources/read" => Self::ResourcesRead,
            "resources/subscribe" => Self::ResourcesSubscribe,
            "resources/unsubscribe" => Self::ResourcesUnsubscribe,
            "resources/directory/read" => Self::ResourcesDirectoryRead,
            "skills/list" => Self::SkillsList,
            "skills/get" => Self::SkillsGet,
            "prompts/list" => Self::PromptsList,
            "prompts/get" => Self::PromptsGet,
            "completion/complete" => Self::Complete,
            "subscriptions/listen" => Self::SubscriptionsListen,
            "tasks/get" => Self::TasksGet,
            "tasks/update" => Self::TasksUpdate,
            "tasks/cancel" => Self::TasksCancel,
            other => Self::Unknown(other),
        }
    }

    /// True for methods that exist only in the legacy era.
    pub fn is_legacy_only(self) -> bool {
        matches!(
            self,
            Self::Initialize
                | Self::Initialized
                | Self::Ping
                | Self::LoggingSetLevel
                | Self::ResourcesSubscribe
                | Self::ResourcesUnsubscribe
                | Self::RootsListChanged
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Method;

    #[test]
    fn parses_known_and_unknown() {
        assert_eq!(Method::parse("tools/call"), Method::ToolsCall);
        assert_eq!(Method::parse("server/discover"), Method::ServerDiscover);
        assert_eq!(Method::parse("tools/cal"), Method::Unknown("tools/cal"));
        assert!(Method::parse("ping").is_legacy_only());
        assert!(!Method::parse("tools/list").is_legacy_only());
    }
}
