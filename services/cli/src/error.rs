//! Every way a command can fail, each with its own exit code, so scripts can
//! tell a bad link from a wrong key from an outage.

/// A failed command. The message is one line, printed to stderr.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The arguments do not make sense together (clap's own errors also exit 2).
    #[error("{0}")]
    Usage(String),
    /// Sharing is turned off by `PLANNOTATOR_SHARE=disabled` or the config file.
    #[error("sharing is disabled ({0}); unset it to share")]
    ShareDisabled(&'static str),
    /// The link is malformed, truncated or its payload does not decode.
    #[error("invalid share link: {0}")]
    InvalidLink(String),
    /// The key does not open the payload (wrong key or tampered data).
    #[error("cannot decrypt the shared plan: wrong key or tampered data")]
    Decrypt,
    /// The paste does not exist (any more).
    #[error("paste not found or expired")]
    NotFound,
    /// The paste service could not be reached or kept failing.
    #[error("paste service unavailable: {0}")]
    Unavailable(String),
    /// The review API could not be reached or kept failing: `{base}
    /// unavailable: {why}`.
    #[error("review service at {0}")]
    ReviewUnavailable(String),
    /// A review link is malformed or damaged.
    #[error("invalid review link: {0}")]
    InvalidReviewLink(String),
    /// The review API answered something unexpected.
    #[error("review service error: {0}")]
    ReviewService(String),
    /// The paste service a review command reached has no review API
    /// (upstream's, or not a planshare server).
    #[error(
        "the paste service at {0} has no review API: reviews need a planshare server; set PLANNOTATOR_PASTE_URL to one (e.g. http://localhost:19433)"
    )]
    NoReviewApi(String),
    /// `review wait` ran out of time before the round was decided (the
    /// review is untouched).
    #[error("{0}")]
    TimedOut(String),
    /// A review command's first read was refused: the link's token does
    /// not open this review (the server tells no more).
    #[error(
        "this link's token is not valid for review {0} (mistyped or revoked), or the review no longer exists"
    )]
    ReviewLinkRefused(String),
    /// The link's key does not open the review's latest version.
    #[error(
        "the key in this link does not open review {0}'s plan: the link is damaged; copy it again"
    )]
    ReviewKey(String),
    /// The paste service refused the payload's size.
    #[error("{0}")]
    TooLarge(String),
    /// An input file or the annotations could not be read.
    #[error("{0}")]
    Input(String),
    /// Refused to talk plain HTTP to a host other than this machine.
    #[error(
        "refusing to use {0} over plain HTTP: use https:// (browsers will not decrypt links over plain HTTP on another host anyway), or allow it with --insecure or PLANSHARE_INSECURE=1"
    )]
    Insecure(String),
    /// The paste service answered something unexpected.
    #[error("paste service error: {0}")]
    Service(String),
    /// A wrong delete token or a refused credential.
    #[error("not authorised: {0}")]
    Unauthorized(String),
    /// The admin API has no such tenant or key; a review has no such
    /// version or link.
    #[error("not found: {0}")]
    AdminNotFound(String),
    /// No review answers this link: it is wrong, revoked or expired, or the
    /// review was deleted.
    #[error("review not found: the link is wrong, revoked or expired, or the review was deleted")]
    ReviewNotFound,
    /// The admin API refused the request: invalid, conflicting or unknown
    /// fields or values (HTTP 400, 409, 413, 415, 422); or the review API
    /// refused a change (someone else pushed, already decided, too many
    /// links, …).
    #[error("rejected: {0}")]
    Rejected(String),
    /// Writing the output failed (e.g. a closed pipe).
    #[error("cannot write output: {0}")]
    Output(String),
    /// `review watch`: changes were requested (the feedback is on
    /// stdout). Not a failure of the command, but scripts need to tell it
    /// from an approval.
    #[error("changes were requested (by the owner or an approver; the feedback is on stdout)")]
    ChangesRequested,
    /// `review watch`: the review is gone (deleted or expired), or the
    /// watcher's own link was revoked.
    #[error("{0}")]
    ReviewClosed(String),
}

impl CliError {
    /// The process exit code (2 is clap's usage error).
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::ShareDisabled(_) => 3,
            CliError::InvalidLink(_) | CliError::InvalidReviewLink(_) => 4,
            CliError::Decrypt | CliError::ReviewKey(_) => 5,
            CliError::NotFound
            | CliError::AdminNotFound(_)
            | CliError::ReviewNotFound
            | CliError::ReviewLinkRefused(_) => 6,
            CliError::Unavailable(_) | CliError::ReviewUnavailable(_) => 7,
            CliError::TooLarge(_) => 8,
            CliError::Input(_) => 9,
            CliError::Insecure(_) => 10,
            CliError::Service(_) | CliError::ReviewService(_) => 11,
            CliError::Unauthorized(_) => 12,
            CliError::Output(_) => 13,
            CliError::Rejected(_) => 14,
            CliError::ChangesRequested => 15,
            CliError::ReviewClosed(_) => 16,
            CliError::TimedOut(_) => 17,
            CliError::NoReviewApi(_) => 18,
        }
    }
}
