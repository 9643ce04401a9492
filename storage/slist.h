/* Intrusive singly linked lists, as the backends keep their open files in
 * (a "next" field in each node): the loop that takes a node out, written
 * once. The caller holds whatever lock guards the list. */
#ifndef PARSA_SLIST_H
#define PARSA_SLIST_H

/* Take node (a type *) out of the list whose first node is *head, linked
 * through each node's field next; nothing if it is not in the list. */
#define SLIST_UNLINK(type, head, node, next)                                  \
	do {                                                                  \
		for (type **slist_pp_ = (head); *slist_pp_;                   \
		     slist_pp_ = &(*slist_pp_)->next) {                       \
			if (*slist_pp_ == (node)) {                           \
				*slist_pp_ = (node)->next;                    \
				break;                                        \
			}                                                     \
		}                                                             \
	} while (0)

#endif
