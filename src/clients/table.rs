//! The one table of MCP clients, read by discovery and by `setup` alike: for every client and
//! scope, its config files (relative to the home or project directory, with their macOS
//! alternatives), where in them its servers are, the dialect they are written in, the precedence
//! discovery gives them (the order of `ROWS`), their labels, and where `setup` registers; for
//! every client its `--client` id, label, detection marks and how `setup` switches a server off;
//! and every list that switches servers off (`LISTS`: file, key, what it reaches).
//!
//! Data only: this module reads no file and decides nothing. `super::places` resolves it
//! against a home and a project, `super::read` reads what it points at.
//!
//! | client | scope | file | servers at | dialect |
//! | --- | --- | --- | --- | --- |
//! | Claude Desktop | user | `~/.config/Claude/claude_desktop_config.json`, macOS `~/Library/Application Support/Claude/…` | `mcpServers` | standard |
//! | Cursor | user | `~/.cursor/mcp.json` | `mcpServers` | standard |
//! | Codex | user | `~/.codex/config.toml` | `[mcp_servers.<name>]` | Codex (TOML) |
//! | Gemini CLI | user | `~/.gemini/settings.json` | `mcpServers` | Gemini |
//! | VS Code | user | `~/.config/Code/User/mcp.json`, macOS `~/Library/Application Support/Code/User/…`, each profile's `User/profiles/<id>/mcp.json`, the same for `Code - Insiders` | `servers` | standard |
//! | Claude Code | user | `~/.claude.json` | `mcpServers` | standard |
//! | Claude Code | local | `~/.claude.json` | `projects.<project>.mcpServers` | standard |
//! | VS Code | workspace | `.vscode/mcp.json` | `servers` | standard |
//! | Cursor | project | `.cursor/mcp.json` | `mcpServers` | standard |
//! | Codex | project | `.codex/config.toml` | `[mcp_servers.<name>]` | Codex (TOML) |
//! | Gemini CLI | project | `.gemini/settings.json` | `mcpServers` | Gemini |
//! | Claude Code | project | `.mcp.json` | `mcpServers` | standard |
//! | — | — | `$MCP_CONFIG_PATH` | `servers`, then `mcpServers` | standard |

use super::dialects::Dialect;

/// An MCP client: `setup` registers with it (`--client`), discovery reads its configs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Client {
    ClaudeCode,
    Cursor,
    Vscode,
    ClaudeDesktop,
    Codex,
    Gemini,
}

/// Register for the user (every project) or for the current project only; also which of the
/// two a config file serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    User,
    Project,
}

/// One row of `ROWS`: a kind of config file. The order of the variants is the precedence
/// order, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceKind {
    /// Claude Desktop's `claude_desktop_config.json`.
    ClaudeDesktop,
    /// Cursor's global `~/.cursor/mcp.json`.
    CursorGlobal,
    /// Codex's user config `~/.codex/config.toml`.
    CodexUser,
    /// Gemini CLI's user settings `~/.gemini/settings.json`.
    GeminiUser,
    /// VS Code's user `mcp.json`.
    VsCodeUser,
    /// Claude Code's user scope: top-level `mcpServers` in `~/.claude.json`.
    ClaudeCodeUser,
    /// Claude Code's local scope: `projects[<dir>].mcpServers` in `~/.claude.json`.
    ClaudeCodeLocal,
    /// VS Code's workspace `.vscode/mcp.json`.
    VsCode,
    /// Cursor's project `.cursor/mcp.json`.
    CursorProject,
    /// Codex's project config `.codex/config.toml`.
    CodexProject,
    /// Gemini CLI's project settings `.gemini/settings.json`.
    GeminiProject,
    /// Claude Code's project scope: `.mcp.json` in the project root.
    ClaudeCodeProject,
    /// The file named by `MCP_CONFIG_PATH`.
    Explicit,
    /// This server's own servers file (`servers_file`), read after every other file.
    ServersFile,
}

impl SourceKind {
    /// A short human-readable name, e.g. `Cursor (global)`.
    pub(crate) fn label(self) -> &'static str {
        row(self).label
    }
}

/// A file, relative to the home or the project directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loc {
    Home(&'static str),
    Project(&'static str),
    /// The file `file` in every directory directly inside the home's `dir`, in byte order of
    /// the directory names (VS Code's profiles: `User/profiles/<id>/mcp.json`).
    HomeEach {
        dir: &'static str,
        file: &'static str,
    },
}

/// One step of a key path in a config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(&'static str),
    /// This project's entry in `projects` (Claude Code's key for the project directory).
    ThisProject,
}

/// How a file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// JSON with comments and trailing commas.
    Jsonc,
    Toml,
}

/// A kind of config file: whose it is, where it is and how its servers are written.
#[derive(Debug)]
pub(crate) struct Row {
    pub kind: SourceKind,
    /// `None` for `MCP_CONFIG_PATH`, which belongs to no client.
    pub client: Option<Client>,
    pub scope: Scope,
    /// Discovery's name for it (`Cursor (global)`).
    pub label: &'static str,
    /// Setup's name for it, next to its client's label (`global`).
    pub scope_label: &'static str,
    /// Where it is, read in this order (later wins); more than one = the Linux and the macOS
    /// location (and, for VS Code, Insiders' and the profiles'). Empty for `MCP_CONFIG_PATH`.
    pub files: &'static [Loc],
    /// Where its servers are (every path is read, later wins).
    pub servers: &'static [&'static [Seg]],
    /// The key other clients use for servers, worth a warning when it is there instead.
    pub other_key: Option<&'static str>,
    pub dialect: Dialect,
    /// `setup` registers here for this client and scope.
    pub registers: bool,
}

impl Row {
    pub(crate) fn format(&self) -> Format {
        match self.dialect {
            Dialect::Codex => Format::Toml,
            Dialect::Standard | Dialect::Gemini => Format::Jsonc,
        }
    }
}

const MCP_SERVERS: &[&[Seg]] = &[&[Seg::Key("mcpServers")]];
const SERVERS: &[&[Seg]] = &[&[Seg::Key("servers")]];
const TOML_SERVERS: &[&[Seg]] = &[&[Seg::Key("mcp_servers")]];
const CLAUDE_DESKTOP: &[Loc] = &[
    Loc::Home(".config/Claude/claude_desktop_config.json"),
    Loc::Home("Library/Application Support/Claude/claude_desktop_config.json"),
];
/// VS Code keeps the user's `mcp.json` in the user profile: the default profile's directory
/// (`User/`), each other profile's (`User/profiles/<id>/`), for VS Code and for VS Code
/// Insiders (`Code - Insiders`), on Linux and on macOS. Registration goes to the first whose
/// directory exists (the default profile of VS Code, then of Insiders), else the first.
const VSCODE_USER: &[Loc] = &[
    Loc::Home(".config/Code/User/mcp.json"),
    Loc::Home("Library/Application Support/Code/User/mcp.json"),
    Loc::Home(".config/Code - Insiders/User/mcp.json"),
    Loc::Home("Library/Application Support/Code - Insiders/User/mcp.json"),
    Loc::HomeEach {
        dir: ".config/Code/User/profiles",
        file: "mcp.json",
    },
    Loc::HomeEach {
        dir: "Library/Application Support/Code/User/profiles",
        file: "mcp.json",
    },
    Loc::HomeEach {
        dir: ".config/Code - Insiders/User/profiles",
        file: "mcp.json",
    },
    Loc::HomeEach {
        dir: "Library/Application Support/Code - Insiders/User/profiles",
        file: "mcp.json",
    },
];

/// Every kind of config file, lowest precedence first (the order of [`SourceKind`]).
pub(crate) const ROWS: &[Row] = &[
    Row {
        kind: SourceKind::ClaudeDesktop,
        client: Some(Client::ClaudeDesktop),
        scope: Scope::User,
        label: "Claude Desktop",
        scope_label: "user",
        files: CLAUDE_DESKTOP,
        servers: MCP_SERVERS,
        other_key: Some("servers"),
        dialect: Dialect::Standard,
        registers: true,
    },
    Row {
        kind: SourceKind::CursorGlobal,
        client: Some(Client::Cursor),
        scope: Scope::User,
        label: "Cursor (global)",
        scope_label: "global",
        files: &[Loc::Home(".cursor/mcp.json")],
        servers: MCP_SERVERS,
        other_key: Some("servers"),
        dialect: Dialect::Standard,
        registers: true,
    },
    Row {
        kind: SourceKind::CodexUser,
        client: Some(Client::Codex),
        scope: Scope::User,
        label: "Codex (user)",
        scope_label: "user",
        files: &[Loc::Home(".codex/config.toml")],
        servers: TOML_SERVERS,
        other_key: None,
        dialect: Dialect::Codex,
        registers: true,
    },
    Row {
        kind: SourceKind::GeminiUser,
        client: Some(Client::Gemini),
        scope: Scope::User,
        label: "Gemini CLI (user)",
        scope_label: "user",
        files: &[Loc::Home(".gemini/settings.json")],
        servers: MCP_SERVERS,
        other_key: None,
        dialect: Dialect::Gemini,
        registers: true,
    },
    Row {
        kind: SourceKind::VsCodeUser,
        client: Some(Client::Vscode),
        scope: Scope::User,
        label: "VS Code (user)",
        scope_label: "user",
        files: VSCODE_USER,
        servers: SERVERS,
        other_key: Some("mcpServers"),
        dialect: Dialect::Standard,
        registers: true,
    },
    Row {
        kind: SourceKind::ClaudeCodeUser,
        client: Some(Client::ClaudeCode),
        scope: Scope::User,
        label: "Claude Code (user scope)",
        scope_label: "user scope",
        files: &[Loc::Home(".claude.json")],
        servers: MCP_SERVERS,
        other_key: None,
        dialect: Dialect::Standard,
        registers: true,
    },
    Row {
        kind: SourceKind::ClaudeCodeLocal,
        client: Some(Client::ClaudeCode),
        scope: Scope::Project,
        label: "Claude Code (local scope)",
        scope_label: "local scope",
        files: &[Loc::Home(".claude.json")],
        servers: &[&[
            Seg::Key("projects"),
            Seg::ThisProject,
            Seg::Key("mcpServers"),
        ]],
        other_key: None,
        dialect: Dialect::Standard,
        registers: false,
    },
    Row {
        kind: SourceKind::VsCode,
        client: Some(Client::Vscode),
        scope: Scope::Project,
        label: "VS Code (workspace)",
        scope_label: "workspace",
        files: &[Loc::Project(".vscode/mcp.json")],
        servers: SERVERS,
        other_key: Some("mcpServers"),
        dialect: Dialect::Standard,
        registers: true,
    },
    Row {
        kind: SourceKind::CursorProject,
        client: Some(Client::Cursor),
        scope: Scope::Project,
        label: "Cursor (project)",
        scope_label: "project",
        files: &[Loc::Project(".cursor/mcp.json")],
        servers: MCP_SERVERS,
        other_key: Some("servers"),
        dialect: Dialect::Standard,
        registers: true,
    },
    Row {
        kind: SourceKind::CodexProject,
        client: Some(Client::Codex),
        scope: Scope::Project,
        label: "Codex (project)",
        scope_label: "project",
        files: &[Loc::Project(".codex/config.toml")],
        servers: TOML_SERVERS,
        other_key: None,
        dialect: Dialect::Codex,
        registers: true,
    },
    Row {
        kind: SourceKind::GeminiProject,
        client: Some(Client::Gemini),
        scope: Scope::Project,
        label: "Gemini CLI (project)",
        scope_label: "project",
        files: &[Loc::Project(".gemini/settings.json")],
        servers: MCP_SERVERS,
        other_key: None,
        dialect: Dialect::Gemini,
        registers: true,
    },
    Row {
        kind: SourceKind::ClaudeCodeProject,
        client: Some(Client::ClaudeCode),
        scope: Scope::Project,
        label: "Claude Code (project scope)",
        scope_label: "project scope",
        files: &[Loc::Project(".mcp.json")],
        servers: MCP_SERVERS,
        other_key: Some("servers"),
        dialect: Dialect::Standard,
        registers: true,
    },
    Row {
        kind: SourceKind::Explicit,
        client: None,
        scope: Scope::Project,
        label: "MCP_CONFIG_PATH",
        scope_label: "MCP_CONFIG_PATH",
        files: &[],
        servers: &[&[Seg::Key("servers")], &[Seg::Key("mcpServers")]],
        other_key: None,
        dialect: Dialect::Standard,
        registers: false,
    },
];

/// This server's own servers file (`servers_file`), read last and on its own, like
/// `MCP_CONFIG_PATH` (`servers`, then `mcpServers`), then the servers kept for this project
/// alone under `projects.<project>.mcpServers` (`setup --disable-others` puts a project's
/// servers there, so that no other project sees them). Not one of `ROWS`.
pub(crate) static OWN_FILE: Row = Row {
    kind: SourceKind::ServersFile,
    client: None,
    scope: Scope::Project,
    label: "servers file",
    scope_label: "servers file",
    files: &[],
    servers: &[
        &[Seg::Key("servers")],
        &[Seg::Key("mcpServers")],
        &[
            Seg::Key("projects"),
            Seg::ThisProject,
            Seg::Key("mcpServers"),
        ],
    ],
    other_key: None,
    dialect: Dialect::Standard,
    registers: false,
};

/// The row of a kind of config file.
pub(crate) fn row(kind: SourceKind) -> &'static Row {
    if kind == SourceKind::ServersFile {
        return &OWN_FILE;
    }
    ROWS.iter()
        .find(|r| r.kind == kind)
        .expect("every SourceKind has a row")
}

/// A file of its own (`MCP_CONFIG_PATH` or the servers file, `kind`) that holds the bare map
/// of servers by name, `{"time": {"command": ...}}`, instead of `{"mcpServers": {...}}`.
pub(crate) const fn bare(kind: SourceKind) -> Row {
    Row {
        kind,
        client: None,
        scope: Scope::Project,
        label: match kind {
            SourceKind::ServersFile => "servers file",
            _ => "MCP_CONFIG_PATH",
        },
        scope_label: match kind {
            SourceKind::ServersFile => "servers file",
            _ => "MCP_CONFIG_PATH",
        },
        files: &[],
        servers: &[&[]],
        other_key: None,
        dialect: Dialect::Standard,
        registers: false,
    }
}

/// The rows of one client, lowest precedence first.
pub(crate) fn rows_of(client: Client) -> impl Iterator<Item = &'static Row> {
    ROWS.iter().filter(move |r| r.client == Some(client))
}

/// How `setup --disable-others` switches a server off in its client: the client's own switch,
/// as its documentation gives it, or, for a client that has none in its files, moving the
/// entry out of them.
///
/// | client | switch | documented in |
/// | --- | --- | --- |
/// | Claude Code | `disabledMcpServers`, `disabledMcpjsonServers` | code.claude.com settings (`disabledMcpjsonServers`), `/mcp` disable |
/// | Codex | `enabled = false` | Codex `config.toml` reference (`mcp_servers.<name>.enabled`) |
/// | Gemini CLI | `mcp.excluded` | geminicli.com configuration (`mcp.allowed`, `mcp.excluded`) |
/// | VS Code | none in `mcp.json` (its enabled state lives in VS Code's own storage) | code.visualstudio.com MCP configuration reference |
/// | Cursor | none in `mcp.json` (its toggle lives in Cursor's own storage) | cursor.com MCP docs |
/// | Claude Desktop | none in `claude_desktop_config.json` | Claude Desktop MCP docs |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SwitchOff {
    /// `enabled = false` on the entry (Codex). The client honours the flags on entries.
    EntryFlag,
    /// The name added to the client's own list (in `LISTS`, `written`) that reaches the
    /// entry's file: the most specific one, in the file registered in if there is one there.
    List,
    /// The entry is removed from the client's file (its definition is kept in this server's
    /// own servers file, the old file in the backups `setup --restore` puts back): the client
    /// has no switch of its own in its files, and ignores `"disabled": true`.
    MoveOut,
}

impl SwitchOff {
    /// Whether the client honours `"disabled": true` / `"enabled": false` on an entry.
    pub(crate) fn honours_entry_flags(self) -> bool {
        self == SwitchOff::EntryFlag
    }
}

/// What the table knows about a client besides its files.
#[derive(Debug)]
pub(crate) struct ClientInfo {
    pub client: Client,
    /// `--client`: clap's name of the variant.
    pub id: &'static str,
    pub label: &'static str,
    /// The scope `setup` registers in without `--scope`.
    pub default_scope: Scope,
    /// Besides its config files, what shows the client is used here.
    pub marks: &'static [Loc],
    /// Its entries carry `"type": "stdio"`.
    pub typed_entries: bool,
    pub switch_off: SwitchOff,
}

/// Every client, in `--client` order.
pub(crate) const CLIENTS: &[ClientInfo] = &[
    ClientInfo {
        client: Client::ClaudeCode,
        id: "claude-code",
        label: "Claude Code",
        default_scope: Scope::User,
        marks: &[Loc::Home(".claude")],
        typed_entries: true,
        switch_off: SwitchOff::List,
    },
    ClientInfo {
        client: Client::Cursor,
        id: "cursor",
        label: "Cursor",
        default_scope: Scope::User,
        marks: &[Loc::Home(".cursor")],
        typed_entries: false,
        switch_off: SwitchOff::MoveOut,
    },
    ClientInfo {
        client: Client::Vscode,
        id: "vscode",
        label: "VS Code",
        default_scope: Scope::Project,
        marks: &[Loc::Project(".vscode")],
        typed_entries: true,
        switch_off: SwitchOff::MoveOut,
    },
    ClientInfo {
        client: Client::ClaudeDesktop,
        id: "claude-desktop",
        label: "Claude Desktop",
        default_scope: Scope::User,
        marks: &[],
        typed_entries: false,
        switch_off: SwitchOff::MoveOut,
    },
    ClientInfo {
        client: Client::Codex,
        id: "codex",
        label: "Codex",
        default_scope: Scope::User,
        marks: &[Loc::Home(".codex")],
        typed_entries: false,
        switch_off: SwitchOff::EntryFlag,
    },
    ClientInfo {
        client: Client::Gemini,
        id: "gemini",
        label: "Gemini CLI",
        default_scope: Scope::User,
        marks: &[Loc::Home(".gemini")],
        typed_entries: false,
        switch_off: SwitchOff::List,
    },
];

impl Client {
    pub(crate) const ALL: [Client; 6] = [
        Client::ClaudeCode,
        Client::Cursor,
        Client::Vscode,
        Client::ClaudeDesktop,
        Client::Codex,
        Client::Gemini,
    ];

    pub(crate) fn info(self) -> &'static ClientInfo {
        CLIENTS
            .iter()
            .find(|c| c.client == self)
            .expect("every Client has a row")
    }

    pub(crate) fn label(self) -> &'static str {
        self.info().label
    }

    /// The command-line name (`--client`).
    pub(crate) fn id(self) -> &'static str {
        self.info().id
    }

    /// Where the client registers servers by default.
    pub(crate) fn default_scope(self) -> Scope {
        self.info().default_scope
    }
}

/// What a list of names does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Meaning {
    /// The servers named are off.
    Excludes,
    /// The servers not named are off.
    Allows,
}

/// Which definitions a list switches off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// The winning definition of the name, from any file (for `setup`: any file of the client).
    Everywhere,
    /// Definitions from any file of the list's client.
    Client,
    /// Definitions from these kinds of file only.
    Rows(&'static [SourceKind]),
}

/// A list of server names in a config file that switches servers off.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ListSwitch {
    pub client: Client,
    pub file: Loc,
    /// Its spellings; the names of every one present count.
    pub at: &'static [&'static [Seg]],
    /// How messages name it.
    pub name: &'static str,
    pub meaning: Meaning,
    pub reach: Reach,
    /// `setup --disable-others` adds names here (the first spelling).
    pub written: bool,
}

const MCPJSON: Reach = Reach::Rows(&[SourceKind::ClaudeCodeProject]);
const GEMINI_EXCLUDED: &[&[Seg]] = &[
    &[Seg::Key("mcp"), Seg::Key("excluded")],
    &[Seg::Key("excludeMCPServers")],
];
const GEMINI_ALLOWED: &[&[Seg]] = &[
    &[Seg::Key("mcp"), Seg::Key("allowed")],
    &[Seg::Key("allowMCPServers")],
];

/// Every list that switches servers off; for one definition the first that does gives the
/// reason.
pub(crate) const LISTS: &[ListSwitch] = &[
    ListSwitch {
        client: Client::ClaudeCode,
        file: Loc::Home(".claude.json"),
        at: &[&[Seg::Key("disabledMcpServers")]],
        name: "disabledMcpServers",
        meaning: Meaning::Excludes,
        reach: Reach::Everywhere,
        written: false,
    },
    ListSwitch {
        client: Client::ClaudeCode,
        file: Loc::Home(".claude.json"),
        at: &[&[
            Seg::Key("projects"),
            Seg::ThisProject,
            Seg::Key("disabledMcpServers"),
        ]],
        name: "disabledMcpServers",
        meaning: Meaning::Excludes,
        reach: Reach::Everywhere,
        written: true,
    },
    ListSwitch {
        client: Client::ClaudeCode,
        file: Loc::Home(".claude.json"),
        at: &[&[
            Seg::Key("projects"),
            Seg::ThisProject,
            Seg::Key("disabledMcpjsonServers"),
        ]],
        name: "disabledMcpjsonServers",
        meaning: Meaning::Excludes,
        reach: MCPJSON,
        written: true,
    },
    ListSwitch {
        client: Client::ClaudeCode,
        file: Loc::Home(".claude/settings.json"),
        at: &[&[Seg::Key("disabledMcpjsonServers")]],
        name: "disabledMcpjsonServers",
        meaning: Meaning::Excludes,
        reach: MCPJSON,
        written: false,
    },
    ListSwitch {
        client: Client::ClaudeCode,
        file: Loc::Project(".claude/settings.json"),
        at: &[&[Seg::Key("disabledMcpjsonServers")]],
        name: "disabledMcpjsonServers",
        meaning: Meaning::Excludes,
        reach: MCPJSON,
        written: false,
    },
    ListSwitch {
        client: Client::ClaudeCode,
        file: Loc::Project(".claude/settings.local.json"),
        at: &[&[Seg::Key("disabledMcpjsonServers")]],
        name: "disabledMcpjsonServers",
        meaning: Meaning::Excludes,
        reach: MCPJSON,
        written: false,
    },
    ListSwitch {
        client: Client::Gemini,
        file: Loc::Home(".gemini/settings.json"),
        at: GEMINI_EXCLUDED,
        name: "mcp.excluded",
        meaning: Meaning::Excludes,
        reach: Reach::Client,
        written: true,
    },
    ListSwitch {
        client: Client::Gemini,
        file: Loc::Project(".gemini/settings.json"),
        at: GEMINI_EXCLUDED,
        name: "mcp.excluded",
        meaning: Meaning::Excludes,
        reach: Reach::Client,
        written: true,
    },
    ListSwitch {
        client: Client::Gemini,
        file: Loc::Home(".gemini/settings.json"),
        at: GEMINI_ALLOWED,
        name: "mcp.allowed",
        meaning: Meaning::Allows,
        reach: Reach::Client,
        written: false,
    },
    ListSwitch {
        client: Client::Gemini,
        file: Loc::Project(".gemini/settings.json"),
        at: GEMINI_ALLOWED,
        name: "mcp.allowed",
        meaning: Meaning::Allows,
        reach: Reach::Client,
        written: false,
    },
];

impl ListSwitch {
    /// Whether the list applies to a definition from `kind`.
    pub(crate) fn reaches(&self, kind: SourceKind) -> bool {
        match self.reach {
            Reach::Everywhere => true,
            Reach::Client => row(kind).client == Some(self.client),
            Reach::Rows(kinds) => kinds.contains(&kind),
        }
    }
}
