//! The review service's errors as API errors (their statuses and codes are
//! `ApiError`'s, in `crate::error`).

use std::time::Duration;

use api_types::ErrorCode;

use super::service::ReviewError;
use crate::error::ApiError;

impl ApiError {
    /// Maps a review operation's failure.
    pub(crate) fn from_review(err: ReviewError) -> Self {
        use tenancy::ReviewRefusal as R;
        let conflict =
            |message: String, code: ErrorCode| ApiError::ReviewConflict { message, code };
        match err {
            ReviewError::NotFound => ApiError::ReviewNotFound,
            ReviewError::OwnerOnly => ApiError::OwnerOnly,
            ReviewError::ApproverOnly => ApiError::ApproverOnly,
            ReviewError::CredentialRequired => ApiError::Unauthorized,
            ReviewError::NoSuch(what) => ApiError::ReviewPartNotFound(what),
            ReviewError::Refused(refusal) => match refusal {
                R::NotOpen(state) => conflict(
                    match state {
                        tenancy::ReviewState::Approved => {
                            "this round is decided already: it was approved. A push of a changed plan opens the next round".into()
                        }
                        tenancy::ReviewState::ChangesRequested => {
                            "this round is decided already: changes were requested. The next round starts when the owner pushes a revised plan".into()
                        }
                        other => format!("this round is decided already ({other})"),
                    },
                    ErrorCode::ReviewDecided,
                ),
                R::StaleVersion { latest } => conflict(
                    format!(
                        "the decision names a version that is not the latest: version {latest} was pushed since (read it, then decide on it)"
                    ),
                    ErrorCode::StaleVersion,
                ),
                R::NameRequired => conflict(
                    "an approver decides under a name: send \"name\" with the decision (or comment first, which binds one)".into(),
                    ErrorCode::NameRequired,
                ),
                R::StaleParent { latest } => conflict(
                    format!(
                        "the parent is not the latest version: version {latest} is (someone else pushed); fetch it and push on it"
                    ),
                    ErrorCode::StaleParent,
                ),
                R::TooManyVersions(max) => conflict(
                    format!("this review has {max} versions, the most a review may have"),
                    ErrorCode::TooManyVersions,
                ),
                R::TooManyLinks(max) => conflict(
                    format!(
                        "this review has {max} live links, the most it may have: revoke one first"
                    ),
                    ErrorCode::TooManyLinks,
                ),
                R::NameBound { bound } => conflict(
                    format!("this link already writes as {bound:?}; a link's name cannot change"),
                    ErrorCode::NameBound,
                ),
                R::NameTaken => conflict(
                    "another link of this review already writes under this name".into(),
                    ErrorCode::NameTaken,
                ),
                R::UnknownVersion => ApiError::InvalidValue(
                    "\"version\" names a version this review does not have".into(),
                ),
                R::OverQuota => ApiError::QuotaExceeded,
                R::CommentsChanged { current } => conflict(
                    if current == 0 {
                        "your comment set was withdrawn since you read it (another tab or device of this link): read the review again, add your changes to what is there now, and send with \"base\": 0".into()
                    } else {
                        format!(
                            "your comment set changed since you read it (another tab or device of this link wrote revision {current}): read the review again, add your changes to what is there now, and send with \"base\": {current}"
                        )
                    },
                    ErrorCode::CommentsChanged,
                ),
                R::TooManyEvents(max) => conflict(
                    format!(
                        "this review has had {max} changes, the most one review may have: start a new review for further rounds"
                    ),
                    ErrorCode::TooManyChanges,
                ),
            },
            ReviewError::Damaged { reason } => ApiError::ReviewDamaged { reason },
            ReviewError::Store(e) => ApiError::from_store(e, false),
            ReviewError::CatalogOpen(e) => ApiError::from_catalog_open(e),
            ReviewError::Catalog(e) => ApiError::from_catalog(e),
            ReviewError::CatalogTimeout => ApiError::CatalogUnavailable {
                retry_after: Duration::from_secs(1),
                source: None,
            },
            ReviewError::Contended => ApiError::Overloaded,
            err @ ReviewError::Draw => ApiError::PasteFailed(Box::new(err)),
        }
    }
}

impl From<ReviewError> for ApiError {
    fn from(err: ReviewError) -> Self {
        ApiError::from_review(err)
    }
}
