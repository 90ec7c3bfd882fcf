#!/usr/bin/env bash
# Keys, certificates and passwords for the TLS part of the end-to-end tests, made fresh at
# test time with openssl (nothing here is committed, nothing is reused between runs).
#
#   tests/e2e/pki.sh DIR     make DIR (it must not hold a PKI yet) and fill it
#
# In DIR:
#   ca.pem, ca.key                  a throw-away CA (EC P-256, valid 2 days) that signs the rest
#   broker.pem, broker.key          the brokers' certificate (SAN IP:127.0.0.1, DNS:localhost),
#   broker.p12                      and the same as a PKCS#12 keystore for Kafka
#   guard.pem, guard.key            the guard's certificate towards its clients (same SANs)
#   guard-upstream.pem/.key         the guard's client certificate towards the brokers' SSL
#                                   listener (CN=elect-leaders-guard), which requires one
#   carol.pem/.key/.p12             client certificates, subject CN=NAME,OU=e2e,O=kafka-elect-leaders
#   dave.pem/.key/.p12              (RFC 2253, as Kafka and the guard write it): carol is the
#                                   one the mTLS guard allows, dave another
#   users.env                       ALICE_PASSWORD, BOB_PASSWORD (SCRAM and PLAIN users of the
#                                   brokers' SASL_SSL listener), KEYSTORE_PASSWORD (the .p12
#                                   files); random, so that a test can grep logs for them
# Private keys are PKCS#8 PEM, unencrypted (what the guard, librdkafka and Python read);
# Java reads the .p12 files.
set -euo pipefail

OUT="${1:?usage: pki.sh DIR}"
[[ -e "$OUT/ca.pem" ]] && { echo "pki: $OUT already holds a PKI" >&2; exit 1; }
command -v openssl >/dev/null 2>&1 || { echo "pki: openssl not found" >&2; exit 1; }
mkdir -p "$OUT"
chmod 700 "$OUT"
cd "$OUT"

SUBJ_TAIL="/O=kafka-elect-leaders/OU=e2e"
DAYS=2

openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$DAYS" \
    -keyout ca.key -out ca.pem -subj "$SUBJ_TAIL/CN=e2e test CA" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null

leaf() { # name subject extended-key-usage [subjectAltName]
    local name=$1 subj=$2 eku=$3 san=${4:-}
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$name.key" -out "$name.csr" -subj "$subj" 2>/dev/null
    {
        echo "basicConstraints=critical,CA:FALSE"
        echo "keyUsage=critical,digitalSignature"
        echo "extendedKeyUsage=$eku"
        [[ -n "$san" ]] && echo "subjectAltName=$san"
    } >"$name.ext"
    openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -set_serial "0x$(openssl rand -hex 8)" \
        -days "$DAYS" -extfile "$name.ext" -out "$name.pem" 2>/dev/null
    rm -f "$name.csr" "$name.ext"
}

# Only letters and digits: they go into Kafka's JAAS and --add-scram syntax unquoted.
secret() { openssl rand -hex 16; }
KEYSTORE_PASSWORD="$(secret)"
p12() { # name
    openssl pkcs12 -export -in "$1.pem" -inkey "$1.key" -certfile ca.pem -name "$1" \
        -out "$1.p12" -passout "pass:$KEYSTORE_PASSWORD"
}

leaf broker "$SUBJ_TAIL/CN=broker" serverAuth,clientAuth "IP:127.0.0.1,DNS:localhost"
p12 broker
leaf guard "$SUBJ_TAIL/CN=elect-leaders-guard" serverAuth "IP:127.0.0.1,DNS:localhost"
leaf guard-upstream "$SUBJ_TAIL/CN=elect-leaders-guard" clientAuth
for user in carol dave; do
    leaf "$user" "$SUBJ_TAIL/CN=$user" clientAuth
    p12 "$user"
done

cat >users.env <<EOF
ALICE_PASSWORD=$(secret)
BOB_PASSWORD=$(secret)
KEYSTORE_PASSWORD=$KEYSTORE_PASSWORD
EOF
chmod 600 ./*.key users.env
echo "pki: CA, certificates and passwords in $OUT" >&2
