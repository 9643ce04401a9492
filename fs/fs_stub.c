/* placeholder until the module lands */
typedef int parsa_placeholder;
