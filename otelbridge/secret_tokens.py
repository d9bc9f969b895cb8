"""Vendor token forms the secret detector (:mod:`otelbridge.secrets`) redacts wherever they stand.

Data only (no import of :mod:`otelbridge.secrets`): :data:`VENDOR_TOKENS` is a tuple of
``(kind, needles, regex)`` that :mod:`otelbridge.secrets` turns into its patterns, in this
order (an earlier kind wins on overlapping text: ``sk-ant-`` before ``sk-``). ``needles`` are
lower-case ASCII literals one of which every match holds (Hyperscan's pre-test).

Formats are the vendors' documented prefixes and lengths (as gitleaks and GitHub secret
scanning list them). A token begins where :data:`START` allows. A token with a distinctive
prefix also counts when it is *cut*: at least 8 characters of its body that run to the end of
the string (or a closing quote: a string in JSON) or to ``…``/``...`` (a workflow label or a
preview the CLI shortened mid-token), unless that body is all lower-case letters
(``npm_lifecycle``, a word rather than a token).
"""

from __future__ import annotations

#: Where a cut token ends: an ellipsis (``…``, ``...``), the end of the string or a closing
#: quote (the end of a string inside JSON or code, also escaped), blanks allowed before either.
CUT = r"(?=\u2026|\.\.\.|[^\S\r\n]*(?:\Z|\\*[\"'])|\s*\Z)"

#: Right after the letter of a backslash escape (``\n``, ``\t``: text still escaped, such as a
#: JSON document inside a string): a word may begin there.
AFTER_ESCAPE = r"(?<=\\[nrtfbv])"
#: Where a token may begin: not inside a word, but after ``_`` (an identifier: an MCP tool's
#: name, ``mcp__x_<token>``) or :data:`AFTER_ESCAPE`.
START = r"(?:(?<![A-Za-z0-9])|" + AFTER_ESCAPE + ")"


def _body(chars: str, full: str, short: int) -> str:
    """A token's body of ``chars``: ``full`` (a quantifier, e.g. ``{20,}``) of them, or a cut
    one of 8 to ``short`` characters, not all lower case, that :data:`CUT` ends."""
    return rf"(?:{chars}{full}|(?![a-z_-]{{8,{short}}}{CUT}){chars}{{8,{short}}}{CUT})"


#: AWS access key id prefixes (user, temporary, role, ... keys), lower case.
AWS_PREFIXES = ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "aipa", "anpa", "anva",
                "apka", "a3t")

#: GitLab token prefixes (docs.gitlab.com/security/tokens: personal, OAuth application secret,
#: deploy, runner authentication and registration, CI/CD job, pipeline trigger, feed, incoming
#: mail, agent for Kubernetes, SCIM, feature flags client).
GITLAB_PREFIXES = ("glpat-", "gloas-", "gldt-", "glrt-", "glrtr-", "glcbt-", "glptt-", "glft-",
                   "glimt-", "glagent-", "glsoat-", "glffct-")


def _lead(prefix: str) -> str:
    """``prefix`` (a literal of word characters) where a token may begin (:data:`START`), the
    literal first: ``re`` searches for it fast (a lookbehind first is tried at every position)."""
    return prefix + rf"(?:(?<![A-Za-z0-9]{prefix})|(?<=\\[nrtfbv]{prefix}))"


_AN = "[A-Za-z0-9]"
#: A line end between lines of base64 (also escaped: text inside JSON)
_B64_NL = r"(?:\r?\n|\\+n)"
#: A body that holds an upper-case letter, a lower-case one and a digit (within its first 64
#: characters): a token, not an identifier such as ``re_compile_all``
_MIXED = r"(?=[\w-]{0,64}[A-Z])(?=[\w-]{0,64}[a-z])(?=[\w-]{0,64}[0-9])"
_W = r"[\w-]"

VENDOR_TOKENS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # sk-ant-api03-…, sk-ant-admin01-…, sk-ant-oat01-…
    ("anthropic_key", ("sk-ant-",), r"sk-ant-[A-Za-z0-9_-]{8,}"),
    # OpenAI sk-…, sk-proj-…, sk-svcacct-…
    ("api_key", ("sk-",), START + r"sk-" + _body("[A-Za-z0-9_-]", "{16,}", 15)),
    ("stripe_key", ("_live_", "_test_", "_prod_", "whsec_"),
     START + r"(?:(?:sk|rk)_(?:live|test|prod)_" + _body(_AN, "{10,}", 9) + r"|whsec_[0-9A-Za-z]{16,})"),
    # bot/user/app-level tokens; xoxe-1- refresh tokens, xoxe.xoxp-1- rotating ones; a browser
    # session's xoxc- token and its d cookie (xoxd-, URL-encoded); webhooks (a workflow's too)
    ("slack_token", ("xox", "xapp-", "hooks.slack.com"),
     START + r"(?:xoxe\.)?xox[abposrec]-" + _body("[0-9A-Za-z-]", "{10,}", 9) + r"|" + START + r"xoxd-[\w%/+=-]{10,}"
     r"|" + START + r"xapp-\d-[0-9A-Za-z-]{10,}"
     r"|(?:(?<=hooks\.slack\.com/services/)|(?<=hooks\.slack\.com/triggers/)"
     r"|(?<=hooks\.slack\.com/workflows/))[\w/]+"),
    ("discord_webhook", ("/webhooks/",),
     r"(?P<keep>\bdiscord(?:app)?\.com/api/(?:v\d+/)?webhooks/\d+/)[\w-]{20,}"),
    # a bot token: its user id (17 to 20 digits) in base64url, whose first four characters
    # only digits give ([MNO][DTjz][AEIMQUYcgk][w-z0-5]), '.', 6 of a timestamp, '.', its HMAC
    # (the charset first: a regex led by a lookbehind is tried at every position)
    ("discord_token", (".",),
     r"[MNO][DTjz][AEIMQUYcgk][w-z0-5](?<![\w-]....)[\w-]{19,23}\.[\w-]{6}\.[\w-]{27,38}(?![\w-])"),
    ("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     r"(?:gh[pousr]_" + _body(_AN, "{20,}", 19) + r"|github_pat_" + _body(r"\w", "{20,}", 19) + ")"),
    ("gitlab_token", GITLAB_PREFIXES + ("gr1348941",),
     START + r"(?:gl(?:pat|oas|dt|rtr?|cbt|ptt|ft|imt|agent|soat|ffct)-" + _body(_W, "{20,}", 19)
     + r"|GR1348941[\w-]{20,})"),
    ("twilio_key", ("sk",), START + r"SK[0-9a-fA-F]{32}\b"),
    ("google_api_key", ("aiza",), START + r"AIza" + _body(_W, "{35}", 34)),
    # OAuth access tokens (ya29.) and client secrets (GOCSPX-)
    ("google_oauth", ("ya29.", "gocspx-"), START + r"ya29\.[\w-]{20,}|" + START + r"GOCSPX-[\w-]{24,}"),
    ("huggingface_token", ("hf_",), START + r"hf_" + _body(_AN, "{30,}", 29)),
    ("npm_token", ("npm_",), START + r"npm_" + _body(_AN, "{36}", 35)),
    # pypi.org and test.pypi.org macaroons
    ("pypi_token", ("pypi-",),
     START + r"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[\w-]{16,}|" + START + r"pypi-AgE[\w-]{8,}" + CUT),
    ("sendgrid_key", ("sg.",), START + r"SG\.(?:[\w-]{16,}\.[\w-]{16,}|[\w-]{16,22}(?:\.[\w-]*)?" + CUT + ")"),
    ("age_key", ("age-secret-key-",), r"AGE-SECRET-KEY-1[0-9A-Z]{20,}"),
    ("shopify_token", ("shpat_", "shpca_", "shppa_", "shpss_"), START + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("digitalocean_token", ("dop_v1_", "doo_v1_", "dor_v1_"), START + r"do[opr]_v1_" + _body("[a-f0-9]", "{64}", 63)),
    # HashiCorp Vault service, batch and recovery tokens; Terraform Cloud API tokens
    ("vault_token", ("hvs.", "hvb.", "hvr."), START + r"hv[sbr]\.[\w-]{24,}"),
    ("terraform_token", (".atlasv1.",), r"\b[A-Za-z0-9]{14}\.atlasv1\." + _body(r"[\w=-]", "{60,}", 59)),
    ("doppler_token", ("dp.st.", "dp.pt.", "dp.ct.", "dp.sa.", "dp.scim.", "dp.audit."),
     START + r"dp\.(?:st|pt|ct|sa|scim|audit)\.[\w.-]{20,}"),
    ("linear_key", ("lin_api_", "lin_oauth_"), START + r"lin_(?:api|oauth)_[A-Za-z0-9]{32,}"),
    ("groq_key", ("gsk_",), START + r"gsk_[A-Za-z0-9]{40,}"),
    ("xai_key", ("xai-",), START + r"xai-[A-Za-z0-9]{40,}"),
    ("databricks_token", ("dapi",), START + r"dapi[a-f0-9]{32}(?:-\d)?\b"),
    ("atlassian_token", ("atatt3",), START + r"ATATT3[\w=-]{50,}"),
    ("mailgun_key", ("key-",), START + r"key-[0-9a-f]{32}\b"),
    ("postman_key", ("pmak-",), START + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"),
    ("sentry_token", ("sntrys_", "sntryu_"), START + r"sntry[su]_[\w=+/.-]{30,}"),
    ("grafana_token", ("glsa_", "glc_"), START + r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|" + START + r"glc_[A-Za-z0-9+/]{32,}=*"),
    # New Relic's user keys (NRAK-), Insights insert keys (NRII-), license keys (36 characters,
    # then NRAL)
    ("newrelic_key", ("nrak-",), START + r"NRAK-[A-Z0-9]{27}\b"),
    ("newrelic_key", ("nrii-",), START + r"NRII-[\w-]{32}(?![\w-])"),
    ("newrelic_key", ("nral",), START + r"[A-Za-z0-9]{36}NRAL\b"),
    ("pulumi_token", ("pul-",), START + r"pul-" + _body("[a-f0-9]", "{40}", 39) + r"\b"),
    # a bot's id, ':', then 'AA' and 33 characters (also in api.telegram.org/bot<token>/ URLs)
    ("telegram_token", (":aa",),
     r"(?:" + START + r"|(?<=/bot))\d{5,16}:AA[\w-]{33}(?![\w-])"),
    ("replicate_token", ("r8_",), START + r"r8_" + _body(_AN, "{32,}", 31)),
    ("perplexity_key", ("pplx-",), START + r"pplx-" + _body(_AN, "{40,}", 39)),
    ("tavily_key", ("tvly-",), START + r"tvly-(?:dev-|prod-)?" + _body(_AN, "{24,}", 23)),
    ("nvidia_key", ("nvapi-",), START + r"nvapi-" + _body(_W, "{40,}", 39)),
    # Square access tokens (sq0atp-, EAAA and 60 characters) and OAuth application secrets
    ("square_token", ("sq0atp-", "sq0csp-"), START + r"sq0(?:atp-[\w-]{22,}|csp-[\w-]{40,})"),
    ("square_token", ("eaaa",), START + r"EAAA(?=[\w-]{0,59}[0-9])[\w-]{56,}+(?![+/=])"),
    ("facebook_token", ("eaacedeose0cba",), START + r"EAACEdEose0cBA[A-Za-z0-9]{20,}"),
    # Alibaba Cloud AccessKey ids
    ("alibaba_key", ("ltai",), START + r"LTAI(?=[A-Za-z]*[0-9])[A-Za-z0-9]{12,20}(?![A-Za-z0-9])"),
    # Dropbox short-lived access tokens: sl. (or sl.u.) and a long body
    ("dropbox_token", ("sl.",), START + r"sl\.(?:u\.)?[\w=-]{100,}"),
    # developer platforms' tokens: Heroku (v2), LangSmith, Pinecone, Tailscale, Supabase,
    # PlanetScale, Neon, Figma, Notion, HubSpot, Brevo, RubyGems, Dynatrace, NuGet, Fly.io (fo1_,
    # FlyV1 fm2_ macaroons), Vercel Blob, PostHog (personal), Prefect, Netlify, Render; Fireworks
    # and Resend (prefixes of code's names too: a body of mixed case and digits). Not X's bearer
    # tokens: their needle, 21 A's, costs Hyperscan 4 ms on 256 Ki of one letter
    ("heroku_key", ("hrku-",), START + r"HRKU-AA[\w-]{40,}"),
    ("langsmith_key", ("lsv2_",), START + r"lsv2_(?:pt|sk)_[A-Za-z0-9_]{20,}"),
    ("pinecone_key", ("pcsk_",), START + r"pcsk_\w{40,}"),
    ("tailscale_key", ("tskey-",), START + r"tskey-(?:auth|api|client|scim|webhook)-[\w-]{16,}"),
    ("supabase_key", ("sbp_", "sb_secret_"), START + r"(?:sbp_[a-f0-9]{40}|sb_secret_[\w-]{16,})"),
    ("planetscale_token", ("pscale_",), START + r"pscale_(?:tkn|pw|oauth)_[\w.=-]{30,}"),
    ("neon_key", ("napi_",), START + r"napi_[a-z0-9]{40,}"),
    ("figma_token", ("figd_",), START + r"figd_[\w-]{30,}"),
    ("notion_token", ("ntn_", "secret_"), r"(?:" + START + r"ntn_[A-Za-z0-9]{40,}|" + _lead("secret_") + _MIXED + r"[A-Za-z0-9]{43}(?![\w-]))"),
    ("hubspot_token", ("pat-na1-", "pat-eu1-"), START + r"pat-(?:na|eu)1-[a-f0-9]{8}(?:-[a-f0-9]{4}){3}-[a-f0-9]{12}"),
    ("brevo_key", ("xkeysib-", "xsmtpsib-"), START + r"x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("rubygems_key", ("rubygems_",), START + r"rubygems_[a-f0-9]{48}"),
    ("dynatrace_token", ("dt0c01.",), START + r"dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}"),
    ("nuget_key", ("oy2",), START + r"oy2[a-z0-9]{43}(?![A-Za-z0-9])"),
    ("fly_token", ("fo1_", "fm1", "fm2"), START + r"(?:fo1_[\w-]{40,}|fm[12][ar]?_[\w+/=-]{50,})"),
    ("vercel_token", ("vercel_blob_rw_",), START + r"vercel_blob_rw_\w{16,}"),
    ("posthog_key", ("phx_",), START + r"phx_[A-Za-z0-9]{40,}"),
    ("prefect_key", ("pnu_",), START + r"pnu_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    ("netlify_token", ("nfp_",), START + r"nfp_[A-Za-z0-9]{36,}"),
    ("render_key", ("rnd_",), _lead("rnd_") + _MIXED + r"[A-Za-z0-9]{30,}"),
    ("fireworks_key", ("fw_",), _lead("fw_") + _MIXED + r"[A-Za-z0-9]{20,}"),
    ("resend_key", ("re_",), _lead("re_") + _MIXED + r"[A-Za-z0-9_]{24,}"),
    # Docker Hub personal and organization access tokens; Contentful's personal ones; JFrog's
    # API keys and reference tokens (base64 of reftkn:01:); Hugging Face's organization tokens;
    # Google's OAuth refresh tokens
    ("docker_token", ("dckr_pat_", "dckr_oat_"), START + r"dckr_(?:pat|oat)_" + _body(_W, "{20,}", 19)),
    ("contentful_token", ("cfpat-",), START + r"CFPAT-" + _body(_W, "{40,}", 39)),
    ("jfrog_token", ("akcp", "cmvmdgtuojaxoj"),
     START + r"(?:AKCp[A-Za-z0-9]{60,}|cmVmdGtuOjAxOj[A-Za-z0-9+/=]{40,})"),
    ("huggingface_token", ("api_org_",), START + r"api_org_[A-Za-z]{34}(?![A-Za-z0-9])"),
    ("google_oauth", ("1//0",), r"(?<![\w/])1//0[\w-]{40,}"),
    # a private key's base64 (DER) without its BEGIN/END lines, by its first bytes: PKCS#8
    # (RSA, EC, Ed25519; encrypted: PBES2), PKCS#1 RSA, SEC1 EC (P-256, P-384), OpenSSH's
    # (openssh-key-v1); not a certificate's or a public key's. Its next lines of base64 too
    # (a key wrapped at 64, 70 or 76 characters, its last line shorter)
    ("private_key", ("ibadanbgkqhkig9w0baqefaasc", "ibaak", "ageambmgbyqgsm49", "mhccaqeei",
                     "migkagebbda", "mc4caqawbqydk2vwbcie", "bgkqhkig9w0bbq0w", "b3blbnnzac1rzxktdjea"),
     START + r"(?:MII[A-Za-z0-9+/]{3}IBADANBgkqhkiG9w0BAQEFAASC|MII[A-Za-z0-9+/]{2}[AgQw]IBAAK[BC]"
     r"|MIGHAgEAMBMGByqGSM49|MHcCAQEEI|MIGkAgEBBDA|MC4CAQAwBQYDK2VwBCIE"
     r"|MII[A-Za-z0-9+/]{2}[A-Za-z0-9+/]BXBgkqhkiG9w0BBQ0w|b3BlbnNzaC1rZXktdjEA)[A-Za-z0-9+/]{20,}={0,2}"
     # (after a full line, 60 characters or more: full lines, then a last one of any length)
     r"(?:(?<=[A-Za-z0-9+/=]{60})(?:" + _B64_NL + r"[A-Za-z0-9+/]{60,}={0,2})*"
     r"(?:" + _B64_NL + r"[A-Za-z0-9+/]{1,59}={0,2}(?![A-Za-z0-9+/=]))?)?"),
    # AWS Bedrock API keys: long-term (ABSK and base64), short-term (bedrock-api-key- and the
    # base64 of a presigned URL)
    ("aws_bedrock_key", ("absk", "bedrock-api-key-"),
     START + r"(?:ABSK[A-Za-z0-9+/]{100,}|bedrock-api-key-[A-Za-z0-9+/]{40,})={0,2}"),
    # CI and code hosts: CircleCI's personal and project tokens, Buildkite's API tokens,
    # Bitbucket's app passwords, Sourcegraph's access tokens, OpenShift's user tokens
    ("circleci_token", ("ccipat_", "cciprj_"), START + r"CCI(?:PAT|PRJ)_[A-Za-z0-9]{20,}_[a-f0-9]{40}"),
    ("buildkite_token", ("bkua_",), START + r"bkua_" + _body("[a-f0-9]", "{40}", 39)),
    ("bitbucket_token", ("atbb",), START + r"ATBB(?=[A-Za-z]*[0-9])[A-Za-z0-9]{32}(?![A-Za-z0-9])"),
    ("sourcegraph_token", ("sgp_",), START + r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}"),
    ("openshift_token", ("sha256~",), START + r"sha256~[\w-]{43}(?![\w-])"),
    # SonarQube's user, analysis and project tokens; Cerebras', Together's and MongoDB Atlas'
    # API keys; Azure DevOps' personal access tokens (84 characters, AZDO among the last);
    # Twilio's account SID and auth token as a pair; Firebase Cloud Messaging's server keys; a
    # Google service account's key file in base64 (its first line and "type")
    ("sonarqube_token", ("squ_", "sqa_", "sqp_"), START + r"sq[uap]_[a-f0-9]{40}(?![A-Za-z0-9])"),
    ("cerebras_key", ("csk-",), START + r"csk-[a-z0-9]{40,}"),
    ("together_key", ("tgp_v1_",), START + r"tgp_v1_[\w-]{40,}"),
    ("mongodb_key", ("mdb_sa_sk_",), START + r"mdb_sa_sk_[\w-]{30,}"),
    ("azure_devops_token", ("azdo",), START + r"[A-Za-z0-9]{52}JQQJ9[A-Za-z0-9]{4}AZDO[A-Za-z0-9]{4}(?![A-Za-z0-9])"),
    # (its literal first: "ac" is in most texts, and a regex led by a lookbehind is tried at
    # every position of each)
    ("twilio_key", ("ac",), r"AC(?:(?<![A-Za-z0-9]AC)|(?<=\\[nrtfbv]AC))[a-f0-9]{32}:[a-f0-9]{32}(?![A-Za-z0-9])"),
    ("firebase_key", (":apa91b",), START + r"AAAA[\w-]{7}:APA91b[\w-]{120,}"),
    ("google_service_account", ("ewogicj0exbl", "eyjhchbpz",),
     START + r"(?:ewogICJ0eXBlIjogInNlcnZpY2VfYWNjb3VudCIs|eyJ0eXBlIjoic2VydmljZV9hY2NvdW50Iiw)[A-Za-z0-9+/]{40,}={0,2}"),
    # more services' keys by their documented prefixes (gitleaks' rules): Airtable, Cloudflare
    # origin CA, Frame.io, Harness, Infracost, MaxMind, Octopus Deploy, ReadMe, Scalingo,
    # SettleMint, Shippo, Typeform, Yandex, EasyPost, Duffel, Flutterwave, Adobe, ClickHouse,
    # 42 (intra), Authress, Clojars, New Relic's browser keys, Facebook page tokens
    ("airtable_token", ("pat",), START + r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    ("cloudflare_key", ("v1.0-",), START + r"v1\.0-[a-f0-9]{24}-[a-f0-9]{100,}"),
    ("frameio_token", ("fio-u-",), START + r"fio-u-[\w=-]{64}"),
    ("harness_token", ("pat.", "sat."), START + r"[ps]at\.[\w-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}"),
    ("infracost_token", ("ico-",), START + r"ico-[A-Za-z0-9]{32}(?![A-Za-z0-9])"),
    ("maxmind_key", ("_mmk",), START + r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk\b"),
    ("octopus_key", ("api-",), START + r"API-(?=[A-Z]*[0-9])[A-Z0-9]{26}(?![A-Za-z0-9])"),
    ("readme_key", ("rdme_",), START + r"rdme_[a-z0-9]{70}"),
    ("scalingo_token", ("tk-us-",), START + r"tk-us-[\w-]{48}"),
    ("settlemint_token", ("sm_aat_", "sm_pat_", "sm_sat_"), START + r"sm_[aps]at_[A-Za-z0-9]{16}\b"),
    ("shippo_token", ("shippo_",), START + r"shippo_(?:live|test)_[a-fA-F0-9]{40}"),
    ("typeform_token", ("tfp_",), START + r"tfp_[\w.=-]{59}"),
    ("yandex_key", ("aqvn",), START + r"AQVN[\w-]{35,38}(?![\w-])"),
    ("easypost_key", ("ezak", "eztk"), START + r"EZ[AT]K[A-Za-z0-9]{54}"),
    ("duffel_token", ("duffel_",), START + r"duffel_(?:test|live)_[\w=-]{43}"),
    ("flutterwave_key", ("flwseck",), START + r"FLWSECK(?:_TEST)?-[a-hA-H0-9]{12,32}(?:-X)?"),
    ("adobe_secret", ("p8e-",), START + r"p8e-[A-Za-z0-9]{32}(?![A-Za-z0-9])"),
    ("clickhouse_key", ("4b1d",), START + r"4b1d(?=[A-Za-z]*[0-9])[A-Za-z0-9]{38}(?![A-Za-z0-9])"),
    ("intra42_secret", ("s-s4t2",), START + r"s-s4t2(?:ud|af)-[a-fA-F0-9]{64}"),
    ("authress_key", (".acc_", ".acc-"),
     START + r"(?:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}\.acc[_-][a-z0-9-]{10,32}\.[\w+/=-]{30,}"),
    ("clojars_token", ("clojars_",), START + r"CLOJARS_[a-z0-9]{60}"),
    ("newrelic_key", ("nrjs-",), START + r"NRJS-[a-f0-9]{19}\b"),
    ("facebook_token", ("eaam", "eaac"), START + r"EAA[MC][A-Za-z0-9]{100,}"),
    # 1Password account secret keys; Microsoft Teams' incoming webhook URLs (the host kept)
    ("onepassword_key", ("a3-",),
     START + r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}(?![A-Z0-9])"),
    ("teams_webhook", ("webhook.office.com/", "outlook.office.com/webhook", "outlook.office365.com/webhook"),
     r"(?P<keep>(?:\.webhook\.office\.com|\boutlook\.office(?:365)?\.com)/webhook(?:b2)?/)[\w@/-]{20,}"),
    # URLs whose path is the secret: Zapier's MCP server and catch hooks, a Sumo Logic source
    # (OTLP, HTTP: a collector endpoint), IFTTT's Maker key, a Make scenario's webhook
    ("secret_url", ("zapier.com/",),
     r"(?P<keep>\bzapier\.com/(?:api/mcp/(?:[as]/)?|hooks/catch/\d+/))(?!\[REDACTED:)[\w=+%-]{6,}"),
    ("secret_url", ("/receiver/v1/",),
     r"(?P<keep>/receiver/v1/(?:otlp|http|prometheus|kinesis)/)(?!\[REDACTED:)[\w=+%-]{20,}"),
    ("secret_url", ("ifttt.com/",), r"(?P<keep>\bifttt\.com/(?:use/|(?:trigger/[\w-]+/(?:json/)?with/)?key/))[\w-]{16,}"),
    ("secret_url", ("make.com/", "integromat.com/"),
     r"(?P<keep>\bhook\.(?:[a-z]{2}\d\.)?(?:make|integromat)\.com/)[a-z0-9]{24,}"),
    # an Azure AD (Entra ID) client secret: 3 characters, a digit, Q~, 31 to 34 more
    ("azure_client_secret", ("q~",), r"(?<![\w~.-])[\w~.]{3}\dQ~[\w~.-]{31,34}(?![\w~.-])"),
    ("aws_access_key", AWS_PREFIXES,
     r"(?<![A-Z0-9])(?:" + "|".join(p.upper() for p in AWS_PREFIXES) + r")"
     r"(?:[A-Z0-9]{16}(?![A-Z0-9])|(?=[A-Z]*[0-9])[A-Z0-9]{8,15}" + CUT + ")"),
    # an STS session token by the base64 of its first bytes (the AWS CLI's text output shows it
    # unlabelled: CREDENTIALS ASIA... date secret token)
    ("aws_session_token", ("iqojb3jpz2lux2vj", "zxivyxdze", "aqodyxdze"),
     START + r"(?:IQoJb3JpZ2luX2Vj|F[wQ]oGZXIvYXdzE|AQoDYXdzE)[A-Za-z0-9/+=]{20,}"),
)

#: A regex that finds something wherever a kind of :data:`VENDOR_TOKENS` matches, searched
#: first (its needle is in most texts)
PRECHECKS = {"discord_token": r"\.[\w-]{6}\.[\w-]{27}",
             # ("sk" and "ac" are in most texts)
             "twilio_key": r"SK[0-9a-fA-F]{32}|AC[a-f0-9]{32}:"}

#: Vendor tokens whose body begins as a JWT's (``eyJ``): :mod:`otelbridge.secrets` tries them
#: before its JWT pattern, which would take the token's first part only (standard base64's
#: ``+`` and ``/`` end a JWT's segment). 1Password's service account tokens; Sentry's
#: organization tokens.
BEFORE_JWT: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("onepassword_token", ("ops_eyj",), START + r"ops_eyJ[A-Za-z0-9+/]{40,}={0,3}"),
    ("sentry_token", ("sntrys_eyj",), START + r"sntrys_eyJ[\w=+/.-]{30,}"),
)
