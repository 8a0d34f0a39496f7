"""The conversion webhook's certificate keeper: a Secret for the webhook's pods, its CA in the
CRD's `caBundle` (docs/api.md#the-conversion-webhooks-certificate). The hook keeps no
credentials; this small component holds the few rights the certificate needs."""
