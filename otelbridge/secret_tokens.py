"""Vendor token forms the secret detector (:mod:`otelbridge.secrets`) redacts wherever they stand.

Data only (no import of :mod:`otelbridge.secrets`): :data:`VENDOR_TOKENS` is a tuple of
``(kind, needles, regex)`` that :mod:`otelbridge.secrets` turns into its patterns, in this
order (an earlier kind wins on overlapping text: ``sk-ant-`` before ``sk-``). ``needles`` are
lower-case ASCII literals one of which every match holds (Hyperscan's pre-test).

Formats are the vendors' documented prefixes and lengths (as gitleaks and GitHub secret
scanning list them). A token with a distinctive prefix also counts when it is *cut*: at least
8 characters of its body that run to the end of the string (or a closing quote: a string in
JSON) or to ``…``/``...`` (a workflow
label or a preview the CLI shortened mid-token), unless that body is all lower-case letters
(``npm_lifecycle``, a word rather than a token).
"""

from __future__ import annotations

#: Where a cut token ends: an ellipsis (``…``, ``...``), the end of the string or a closing
#: quote (the end of a string inside JSON or code, also escaped).
CUT = r"(?=\u2026|\.\.\.|\Z|\\*[\"'])"


def _body(chars: str, full: str, short: int) -> str:
    """A token's body of ``chars``: ``full`` (a quantifier, e.g. ``{20,}``) of them, or a cut
    one of 8 to ``short`` characters, not all lower case, that :data:`CUT` ends."""
    return rf"(?:{chars}{full}|(?![a-z_-]+{CUT}){chars}{{8,{short}}}{CUT})"


#: AWS access key id prefixes (user, temporary, role, ... keys), lower case.
AWS_PREFIXES = ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "aipa", "anpa", "anva",
                "apka", "a3t")

#: GitLab token prefixes (docs.gitlab.com/security/tokens: personal, OAuth application secret,
#: deploy, runner authentication and registration, CI/CD job, pipeline trigger, feed, incoming
#: mail, agent for Kubernetes, SCIM, feature flags client).
GITLAB_PREFIXES = ("glpat-", "gloas-", "gldt-", "glrt-", "glrtr-", "glcbt-", "glptt-", "glft-",
                   "glimt-", "glagent-", "glsoat-", "glffct-")

_AN = "[A-Za-z0-9]"
_W = r"[\w-]"

VENDOR_TOKENS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # sk-ant-api03-…, sk-ant-admin01-…, sk-ant-oat01-…
    ("anthropic_key", ("sk-ant-",), r"sk-ant-[A-Za-z0-9_-]{8,}"),
    # OpenAI sk-…, sk-proj-…, sk-svcacct-…
    ("api_key", ("sk-",), r"\bsk-" + _body("[A-Za-z0-9_-]", "{16,}", 15)),
    ("stripe_key", ("_live_", "_test_", "whsec_"),
     r"\b(?:(?:sk|rk)_(?:live|test)_" + _body(_AN, "{10,}", 9) + r"|whsec_[0-9A-Za-z]{16,})"),
    # bot/user/app-level tokens; xoxe-1- refresh tokens, xoxe.xoxp-1- rotating ones; webhooks
    ("slack_token", ("xox", "xapp-", "hooks.slack.com"),
     r"\b(?:xoxe\.)?xox[abposre]-" + _body("[0-9A-Za-z-]", "{10,}", 9) + r"|\bxapp-\d-[0-9A-Za-z-]{10,}"
     r"|(?<=hooks\.slack\.com/services/)[\w/]+"),
    ("discord_webhook", ("/webhooks/",),
     r"(?P<keep>\bdiscord(?:app)?\.com/api/(?:v\d+/)?webhooks/\d+/)[\w-]{20,}"),
    ("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     r"(?:gh[pousr]_" + _body(_AN, "{20,}", 19) + r"|github_pat_" + _body(r"\w", "{20,}", 19) + ")"),
    ("gitlab_token", GITLAB_PREFIXES + ("gr1348941",),
     r"\b(?:gl(?:pat|oas|dt|rtr?|cbt|ptt|ft|imt|agent|soat|ffct)-" + _body(_W, "{20,}", 19)
     + r"|GR1348941[\w-]{20,})"),
    ("twilio_key", ("sk",), r"\bSK[0-9a-fA-F]{32}\b"),
    ("google_api_key", ("aiza",), r"\bAIza" + _body(_W, "{35}", 34)),
    # OAuth access tokens (ya29.) and client secrets (GOCSPX-)
    ("google_oauth", ("ya29.", "gocspx-"), r"\bya29\.[\w-]{20,}|\bGOCSPX-[\w-]{24,}"),
    ("huggingface_token", ("hf_",), r"\bhf_[A-Za-z0-9]{30,}"),
    ("npm_token", ("npm_",), r"\bnpm_" + _body(_AN, "{36}", 35)),
    # pypi.org and test.pypi.org macaroons
    ("pypi_token", ("pypi-",),
     r"\bpypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[\w-]{16,}|\bpypi-AgE[\w-]{8,}" + CUT),
    ("sendgrid_key", ("sg.",), r"\bSG\.[\w-]{16,}\.[\w-]{16,}"),
    ("age_key", ("age-secret-key-",), r"AGE-SECRET-KEY-1[0-9A-Z]{20,}"),
    ("shopify_token", ("shpat_", "shpca_", "shppa_", "shpss_"), r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("digitalocean_token", ("dop_v1_", "doo_v1_", "dor_v1_"), r"\bdo[opr]_v1_[a-f0-9]{64}"),
    # HashiCorp Vault service, batch and recovery tokens; Terraform Cloud API tokens
    ("vault_token", ("hvs.", "hvb.", "hvr."), r"\bhv[sbr]\.[\w-]{24,}"),
    ("terraform_token", (".atlasv1.",), r"\b[A-Za-z0-9]{14}\.atlasv1\.[\w=-]{60,}"),
    ("doppler_token", ("dp.st.", "dp.pt.", "dp.ct.", "dp.sa.", "dp.scim.", "dp.audit."),
     r"\bdp\.(?:st|pt|ct|sa|scim|audit)\.[\w.-]{20,}"),
    ("linear_key", ("lin_api_", "lin_oauth_"), r"\blin_(?:api|oauth)_[A-Za-z0-9]{32,}"),
    ("groq_key", ("gsk_",), r"\bgsk_[A-Za-z0-9]{40,}"),
    ("xai_key", ("xai-",), r"\bxai-[A-Za-z0-9]{40,}"),
    ("databricks_token", ("dapi",), r"\bdapi[a-f0-9]{32}(?:-\d)?\b"),
    ("atlassian_token", ("atatt3",), r"\bATATT3[\w=-]{50,}"),
    ("mailgun_key", ("key-",), r"\bkey-[0-9a-f]{32}\b"),
    ("postman_key", ("pmak-",), r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"),
    ("sentry_token", ("sntrys_", "sntryu_"), r"\bsntry[su]_[\w=+/.-]{30,}"),
    ("grafana_token", ("glsa_", "glc_"), r"\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|\bglc_[A-Za-z0-9+/]{32,}=*"),
    ("newrelic_key", ("nrak-",), r"\bNRAK-[A-Z0-9]{27}\b"),
    ("pulumi_token", ("pul-",), r"\bpul-[a-f0-9]{40}\b"),
    ("aws_access_key", AWS_PREFIXES,
     r"(?<![A-Z0-9])(?:" + "|".join(p.upper() for p in AWS_PREFIXES) + r")"
     r"(?:[A-Z0-9]{16}(?![A-Z0-9])|(?=[A-Z]*[0-9])[A-Z0-9]{8,15}" + CUT + ")"),
)
