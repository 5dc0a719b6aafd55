# family.mk - install the built-in operator-family rules
INSTALL_DATA += share/families.rules
